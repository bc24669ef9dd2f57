package rdmaflux.cm;

import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.RemoteBuffer;

/**
 * Memory registered in the protection domain of a connection's {@link RdmaLoops} for its device: the
 * local side of sends, RDMA reads, writes and atomics on any connection of those loops and that device,
 * and, through {@link #remote()}, what to hand the peer so it can target this memory. Closed with the
 * connection it was registered through at the latest, and when its device is removed: using it then fails
 * with {@link IllegalStateException} (an operation on the failed connection, with its
 * {@link RdmaCmException.DeviceRemoved}); register the memory again through a connection on a device that is
 * there.
 */
public interface RegisteredBuffer extends AutoCloseable {
    /** {@return the memory (this view's range)} */
    MemorySegment segment();

    /** {@return the length of this view in bytes} */
    long length();

    /**
     * What the peer needs to access this view.
     *
     * @return the descriptor (address, length, rkey) of this view for the peer
     * @throws IllegalStateException when registered without remote access, or when the registration is gone
     *         (its device was removed: {@link RdmaCmException.DeviceRemoved})
     */
    RemoteBuffer remote();

    /**
     * A sub-range sharing the registration.
     *
     * @param offset bytes from this view's start
     * @param length bytes
     * @return the view
     */
    RegisteredBuffer slice(long offset, long length);

    /**
     * Ends this registration (the whole lease {@link RdmaConnection#register} returned, for slices too);
     * idempotent. The buffer is refused to new operations at once. The region is deregistered when no
     * other {@code register()} of the same memory holds it any more and the sends, reads or writes using
     * it completed (or their connections ended): closing never pulls memory from under the device. The
     * memory itself stays the caller's to free, after {@code close()} and after the operations ended.
     */
    @Override
    void close();
}
