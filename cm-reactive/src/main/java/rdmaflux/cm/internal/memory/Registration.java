package rdmaflux.cm.internal.memory;

import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RegisteredBuffer;

import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.RemoteBuffer;

import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A memory region of a loops instance's protection domain ({@link Registrations}), shared by every
 * {@link Lease} on the same memory and by their views.
 *
 * <p>Holders: each {@link RdmaConnection#register} call (and each large message sent from memory the
 * application did not register for remote reads) holds a {@link Lease}; the registration is closed when
 * the last lease is. A connection closes the leases made through it when it ends.
 *
 * <p>Operations take a lease of another kind ({@link #acquire()}) while the device may use it: from the
 * moment a send, read, write or grant taking one of its views is accepted until it completes, is
 * withdrawn, or the connection's queue pair is gone. Once the last holder let go, the registration only
 * marks itself closing while operations hold it: new operations are refused, and the region is
 * deregistered when the last operation's lease is returned. So closing can never pull memory from under
 * the device, whichever connection's operation uses it.
 *
 * <p>Threads: any; the lease count and the closing flag are one atomic word.
 */
public final class Registration {
    private static final int CLOSING = 1 << 30;
    private static final int CLOSED = 1 << 29;

    private final MemoryRegion mr;
    private final Registrations cache;
    /** What the cache finds it by. */
    final Registrations.Key key;
    /** Open leases; guarded by {@link #cache}. */
    int holders;
    /** ConnectionLeases in the low bits, {@link #CLOSING} once the last holder let go, {@link #CLOSED} once deregistered. */
    private final AtomicInteger state = new AtomicInteger();

    Registration(MemoryRegion mr, Registrations cache, Registrations.Key key) {
        this.mr = mr;
        this.cache = cache;
        this.key = key;
    }

    /**
     * A buffer from {@link RdmaConnection#register}.
     *
     * @param b a buffer from {@link RdmaConnection#register}
     * @return its registration
     */
    public static Registration of(RegisteredBuffer b) {
        return ((View) b).owner();
    }

    /**
     * A buffer from {@link RdmaConnection#register}.
     *
     * @param b a buffer from {@link RdmaConnection#register}
     * @return its local key
     */
    public static int lkeyOf(RegisteredBuffer b) {
        return ((View) b).lkey();
    }

    /** {@return the region (its keys and access), for posting} */
    public MemoryRegion region() {
        return mr;
    }

    /**
     * Takes a lease for an operation.
     *
     * @throws IllegalStateException when the registration was closed
     */
    public void acquire() {
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
    public void release() {
        int s = state.decrementAndGet();
        if (s == CLOSING && state.compareAndSet(CLOSING, CLOSED)) {
            mr.close();
        }
    }

    /** The last holder let go: closes now, or when the last operation's lease is returned. Idempotent. */
    public void close() {
        int s = state.getAndUpdate(v -> (v & (CLOSING | CLOSED)) != 0 ? v : v | CLOSING);
        if ((s & (CLOSING | CLOSED)) == 0 && s == 0 && state.compareAndSet(CLOSING, CLOSED)) {
            mr.close();
        }
    }

    /**
     * One holder's claim on the registration: what {@link RdmaConnection#register} returns views of. The
     * memory is the holder's own segment (same address and length as the region's, maybe another scope).
     */
    public final class Lease {
        private final MemorySegment memory;
        private final Set<Lease> owner;
        private final AtomicBoolean closed = new AtomicBoolean();

        /** Called by {@link Registrations} with the holder already counted. */
        Lease(MemorySegment memory, Set<Lease> owner) {
            this.memory = memory;
            this.owner = owner;
            if (owner != null) {
                owner.add(this);
            }
        }

        /** {@return the registration} */
        public Registration registration() {
            return Registration.this;
        }

        /** {@return a view of the whole memory} */
        View view() {
            return new View(this, 0, memory.byteSize());
        }

        /** {@return whether this lease was closed} */
        public boolean isClosed() {
            return closed.get();
        }

        /** Lets go of the registration, once; the last holder's close deregisters it. */
        public void close() {
            if (closed.compareAndSet(false, true)) {
                if (owner != null) {
                    owner.remove(this);
                }
                cache.unhold(Registration.this);
            }
        }
    }

    /** A range of a lease's memory. */
    public final class View implements RegisteredBuffer {
        private final Lease lease;
        private final long offset;
        private final long length;

        View(Lease lease, long offset, long length) {
            this.lease = lease;
            this.offset = offset;
            this.length = length;
        }

        int lkey() {
            return mr.lkey();
        }

        /** {@return where in the region this view starts} */
        public long offset() {
            return offset;
        }

        public Registration owner() {
            return Registration.this;
        }

        /** {@return whether this view's lease was closed (the registration may live on for other holders)} */
        public boolean isClosed() {
            return lease.isClosed();
        }

        @Override
        public MemorySegment segment() {
            return lease.memory.asSlice(offset, length);
        }

        @Override
        public long length() {
            return length;
        }

        @Override
        public RemoteBuffer remote() {
            if (mr.isClosed()) {
                // Its key would name nothing, or a later region with the same key: refuse rather than hand it out.
                throw new IllegalStateException("the registered buffer was closed (or its device removed): " + mr);
            }
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
            return new View(lease, offset + off, len);
        }

        @Override
        public void close() {
            lease.close();
        }
    }
}
