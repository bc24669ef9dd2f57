package rdmaflux.cm;

import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.RemoteBuffer;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A memory region registered through {@link RdmaConnection#register}, shared by its views.
 *
 * <p>Operations lease it while the device may use it: from the moment a send, read or write taking one
 * of its views is accepted until it completes, is withdrawn, or the connection's queue pair is gone.
 * Closing it while leased only marks it closing: new operations are refused, and the region is
 * deregistered when the last lease is returned. So closing can never pull memory from under the device.
 *
 * <p>Threads: any; the lease count and the closing flag are one atomic word.
 */
final class Registration {
    private static final int CLOSING = 1 << 30;
    private static final int CLOSED = 1 << 29;

    private final MemoryRegion mr;
    /** Leases in the low bits, {@link #CLOSING} once closed by the application, {@link #CLOSED} once deregistered. */
    private final AtomicInteger state = new AtomicInteger();

    Registration(MemoryRegion mr) {
        this.mr = mr;
    }

    /** {@return a view of the whole region} */
    View view() {
        return new View(0, mr.length());
    }

    /**
     * A buffer from {@link RdmaConnection#register}.
     *
     * @param b a buffer from {@link RdmaConnection#register}
     * @return its registration
     */
    static Registration of(RegisteredBuffer b) {
        return ((View) b).owner();
    }

    /**
     * A buffer from {@link RdmaConnection#register}.
     *
     * @param b a buffer from {@link RdmaConnection#register}
     * @return its local key
     */
    static int lkeyOf(RegisteredBuffer b) {
        return ((View) b).lkey();
    }

    /** {@return the region (its keys and access), for posting} */
    MemoryRegion region() {
        return mr;
    }

    /**
     * Takes a lease for an operation.
     *
     * @throws IllegalStateException when the registration was closed
     */
    void acquire() {
        while (true) {
            int s = state.get();
            if ((s & (CLOSING | CLOSED)) != 0 || mr.isClosed()) {
                throw new IllegalStateException("the registered buffer was closed: " + mr);
            }
            if (state.compareAndSet(s, s + 1)) {
                return;
            }
        }
    }

    /** Returns a lease; the last one of a closing registration deregisters it. */
    void release() {
        int s = state.decrementAndGet();
        if (s == CLOSING && state.compareAndSet(CLOSING, CLOSED)) {
            mr.close();
        }
    }

    /** Closes now, or when the last lease is returned. Idempotent. */
    void close() {
        int s = state.getAndUpdate(v -> (v & (CLOSING | CLOSED)) != 0 ? v : v | CLOSING);
        if ((s & (CLOSING | CLOSED)) == 0 && s == 0 && state.compareAndSet(CLOSING, CLOSED)) {
            mr.close();
        }
    }

    /** A range of the registration. */
    final class View implements RegisteredBuffer {
        private final long offset;
        private final long length;

        View(long offset, long length) {
            this.offset = offset;
            this.length = length;
        }

        int lkey() {
            return mr.lkey();
        }

        /** {@return where in the region this view starts} */
        long offset() {
            return offset;
        }

        Registration owner() {
            return Registration.this;
        }

        @Override
        public MemorySegment segment() {
            return mr.segment().asSlice(offset, length);
        }

        @Override
        public long length() {
            return length;
        }

        @Override
        public RemoteBuffer remote() {
            if (!mr.access().contains(AccessFlag.REMOTE_READ) && !mr.access().contains(AccessFlag.REMOTE_WRITE)
                    && !mr.access().contains(AccessFlag.REMOTE_ATOMIC)) {
                throw new IllegalStateException("registered without remote access");
            }
            return new RemoteBuffer(mr.address() + offset, length, mr.rkey());
        }

        @Override
        public RegisteredBuffer slice(long off, long len) {
            if (off < 0 || len < 0 || off > length - len) {
                throw new IndexOutOfBoundsException("slice [" + off + ", " + (off + len) + ") of " + length);
            }
            return new View(offset + off, len);
        }

        @Override
        public void close() {
            Registration.this.close();
        }
    }
}
