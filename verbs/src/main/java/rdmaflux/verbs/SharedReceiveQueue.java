package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.ibv_srq;
import rdmaflux.verbs.ffi.ibv_srq_attr;

/**
 * A shared receive queue ({@code struct ibv_srq}): receives posted here serve every QP attached to it.
 *
 * <p>As a QP's queues do, it records its posted receives with their regions, each under a work lease,
 * until a poll returns the completion (on the CQ of whichever QP took it) or the SRQ is destroyed; see
 * {@link QueuePair}. A receive taken by a QP that is destroyed before its completion was polled keeps its
 * lease until the SRQ is destroyed. Posts and retirements hold the SRQ's lock.
 */
public final class SharedReceiveQueue extends NativeResource {
    private static final int SRQ_LIMIT = 1 << 1;

    private final ProtectionDomain pd;
    private final int maxWr;
    private final int maxSge;
    private final MemorySegment postFn;
    /** The posted receives not yet retired. */
    private final WorkRing ring;
    /** Held by posts and retirements alike: completions of several CQs retire from the ring. */
    private final QueueLock lock = new QueueLock();

    SharedReceiveQueue(ProtectionDomain pd, MemorySegment srq, int maxWr, int maxSge) {
        super(Rank.SRQ, srq.reinterpret(ibv_srq.sizeof()), pd, pd.context());
        this.pd = pd;
        this.maxWr = maxWr;
        this.maxSge = maxSge;
        this.postFn = ibv_context_ops.post_srq_recv(ibv_context.ops(pd.context().handle));
        this.ring = new WorkRing(maxWr, maxSge, lock);
    }

    /** {@return the protection domain} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** {@return the depth the device granted} */
    public int maxWr() {
        return maxWr;
    }

    /** {@return scatter/gather entries per receive} */
    public int maxSge() {
        return maxSge;
    }

    /**
     * Posts the first {@code count} receive requests of the batch as one chain.
     *
     * @param requests the batch
     * @param count how many, from index 0
     */
    public void postReceive(ReceiveRequests requests, int count) {
        // The lock stands for a lease on the SRQ: close() waits for it before it destroys anything.
        lock.lock(this);
        try {
            int rc = requests.postRecorded(this, ring, postFn, handle, count, maxSge);
            if (rc != 0) {
                throw requests.postFailure("ibv_post_srq_recv", rc);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Retires the first outstanding receive with this id, which a poll returned; see {@link WorkRing#retireOne}. */
    void retire(long wrId) {
        lock.lock(this);
        try {
            ring.retireOne(wrId);
        } finally {
            lock.unlock();
        }
    }

    /** {@return whether an outstanding receive has this id} */
    boolean contains(long wrId) {
        lock.lock(this);
        try {
            return ring.contains(wrId);
        } finally {
            lock.unlock();
        }
    }

    /** {@return the receives posted and not yet retired} */
    int outstanding() {
        lock.lock(this);
        try {
            return ring.outstanding();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Arms the limit event: when fewer than {@code limit} receives remain, an SRQ_LIMIT_REACHED async event fires.
     *
     * @param limit the low-water mark
     */
    public void armLimit(int limit) {
        MemorySegment srq = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_srq_attr.allocate(arena);
            ibv_srq_attr.srq_limit(attr, limit);
            Calls.IBV_MODIFY_SRQ.callStatus(srq, attr, SRQ_LIMIT);
        } finally {
            release();
        }
    }

    /** {@return the current limit as the device reports it} */
    public int queryLimit() {
        MemorySegment srq = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_srq_attr.allocate(arena);
            Calls.IBV_QUERY_SRQ.callStatus(srq, attr);
            return ibv_srq_attr.srq_limit(attr);
        } finally {
            release();
        }
    }

    /** Waits for posts in flight, which hold the lock instead of a lease; later ones see the SRQ closed. */
    @Override
    void beforeChildren() {
        lock.lock(this);
        lock.unlock();
    }

    @Override
    void destroy() {
        Calls.IBV_DESTROY_SRQ.callStatus(handle);
        // Only once it is gone: a failed destroy keeps the leases, and what they hold stays registered.
        lock.lock(this);
        try {
            ring.retireAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "SharedReceiveQueue[maxWr=" + maxWr + "]";
    }
}
