package rdmaflux.cm;

import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.RemoteBuffer;

/**
 * Memory registered with a connection's protection domain: the local side of RDMA reads, writes and
 * atomics, and, through {@link #remote()}, what to hand the peer so it can target this memory.
 * Closed with its connection at the latest.
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
     * @throws IllegalStateException when registered without remote access
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
     * Deregisters the memory (the whole registration, for slices too); idempotent. While sends, reads or
     * writes using it are outstanding, it is refused to new operations at once and deregistered when the
     * last of them completed (or the connection ended): closing never pulls memory from under the device.
     * The memory itself stays the caller's to free, after {@code close()} and after the operations ended.
     */
    @Override
    void close();
}
