package rdmaflux.cm;

import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.RemoteBuffer;

import java.lang.foreign.MemorySegment;

/**
 * A memory region registered through {@link RdmaConnection#register}, shared by its views.
 *
 * <p>Threads: immutable after construction; any thread may use its views. Closing a view deregisters
 * the region (the verbs layer makes that idempotent).
 */
final class Registration {
    private final MemoryRegion mr;

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
     * @return its local key
     */
    static int lkeyOf(RegisteredBuffer b) {
        return ((View) b).lkey();
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
            if (off < 0 || len < 0 || off + len > length) {
                throw new IndexOutOfBoundsException("slice [" + off + ", " + (off + len) + ") of " + length);
            }
            return new View(offset + off, len);
        }

        @Override
        public void close() {
            mr.close();
        }
    }
}
