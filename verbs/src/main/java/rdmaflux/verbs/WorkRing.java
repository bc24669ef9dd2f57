package rdmaflux.verbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The work requests of one work queue (a QP's send or receive queue, an SRQ) that were posted and whose
 * completion was not polled yet: per request its {@code wr_id} and the objects it references, each under a
 * work lease ({@link NativeResource#acquireWork()}). Polling a completion gives back the leases of the
 * requests it completes; destroying the queue gives back all.
 *
 * <p>Sized to the queue's depth, rounded up to a power of two, and reused: recording and retiring allocate
 * nothing. It grows (allocating) only when more requests are outstanding than that, which a provider can
 * allow when completions sit in the CQ unpolled.
 *
 * <p>Threads: one producer at a time (the poster, serialised by the queue's {@link QueueLock}) and one
 * consumer at a time (a poller of the queue's CQ, serialised by {@link #consumerLock}). The producer writes
 * entries beyond {@link #tail} and publishes them by moving it, before the provider's post function runs;
 * the consumer gives back entries from {@link #head} and publishes that by moving it. Growing, and taking
 * back the entries of requests the provider refused, hold the consumer lock. An SRQ's ring, whose
 * completions arrive on several CQs, is used under one lock on both sides.
 *
 * <p>Retiring relies on the order verbs guarantees: a send queue, and the receive queue of a QP without an
 * SRQ, complete their requests in the order posted (unsignaled ones silently, with the next signaled one).
 * A completion for {@code wr_id} X therefore completes every request from the head up to the first one
 * with id X; that is safe whatever ids the caller reuses, since the first match is never posted after the
 * request that really completed (see {@link #retireThrough}). An SRQ's requests are taken by several QPs, so a completion
 * there gives back only the first entry with its id ({@link #retireOne}); with ids reused, that is the
 * oldest, which an SRQ (a FIFO) consumed first.
 */
final class WorkRing {
    /** Marks an entry an SRQ completion gave back out of order; the head skips it. */
    private static final int DONE = -1;
    private static final VarHandle HEAD;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(WorkRing.class, "head", long.class);
            TAIL = l.findVarHandle(WorkRing.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final QueueLock consumerLock;
    private final int stride;
    private long[] ids;
    /** {@link #stride} slots per entry. */
    private NativeResource[] resources;
    /** Per entry, how many of its slots are used (nulls may be among them), or {@link #DONE}. */
    private int[] counts;
    private int mask;
    /**
     * The oldest entry not given back; written by the consumer (release), read by the producer (acquire) to
     * see that the entries before it were cleared.
     */
    @SuppressWarnings("unused") // through HEAD
    private long head;
    /** One past the last published entry; written by the producer (release), read by the consumer (acquire). */
    @SuppressWarnings("unused") // through TAIL
    private long tail;
    /** One past the last entry written, published or not; the producer's own. */
    private long reserved;

    /**
     * @param depth the queue's depth
     * @param stride the most objects one request references
     * @param consumerLock what consumers hold: the CQ's poll lock, or the SRQ's one lock
     */
    WorkRing(int depth, int stride, QueueLock consumerLock) {
        int size = Integer.highestOneBit(Math.max(1, depth));
        if (size < depth) {
            size <<= 1;
        }
        this.stride = Math.max(1, stride);
        this.consumerLock = consumerLock;
        this.ids = new long[size];
        this.resources = new NativeResource[size * this.stride];
        this.counts = new int[size];
        this.mask = size - 1;
    }

    /** {@return the requests recorded and not given back (published or not)} */
    int outstanding() {
        return (int) (reserved - (long) HEAD.getAcquire(this));
    }

    /** {@return the entries the ring holds before it grows} */
    int size() {
        return mask + 1;
    }

    // ---- producer side (one thread at a time) ----

    /** {@return the mark to pass {@link #rollback} to drop the entries about to be written} */
    long mark() {
        return reserved;
    }

    /** Starts the entry of a request with this id; grows the ring when it is full. */
    void begin(long wrId) {
        if (reserved - (long) HEAD.getAcquire(this) > mask) {
            grow();
        }
        int i = (int) reserved & mask;
        ids[i] = wrId;
        counts[i] = 0;
        reserved++;
    }

    /** Adds a leased object to the entry {@link #begin} started; the ring now owns the lease. */
    void add(NativeResource r) {
        int i = (int) (reserved - 1) & mask;
        int n = counts[i];
        if (n == stride) {
            // More than the queue's limits allow reached the ring: a bug, but never drop a lease.
            throw new IllegalStateException("work request references more than " + stride + " objects");
        }
        resources[i * stride + n] = r;
        counts[i] = n + 1;
    }

    /**
     * Sets slot {@code k} of the entry {@link #begin} started, giving back the lease of what it held: the
     * extended post API sets an entry's scatter/gather entry or destination again by replacing it.
     */
    void put(int k, NativeResource r) {
        int i = (int) (reserved - 1) & mask;
        int n = counts[i];
        int slot = i * stride + k;
        NativeResource old = k < n ? resources[slot] : null;
        for (int j = n; j < k; j++) {
            resources[i * stride + j] = null;
        }
        resources[slot] = r;
        if (k >= n) {
            counts[i] = k + 1;
        }
        if (old != null) {
            old.releaseWork();
        }
    }

    /**
     * Publishes the entries written so far: from here on a completion finds them. Called before the
     * provider may queue the requests, so that no completion can be polled before its entry is there.
     */
    void publish() {
        TAIL.setRelease(this, reserved);
    }

    /**
     * Drops the entries from {@code upTo} on, published or not, giving their leases back: the provider
     * refused those requests. Takes the consumer lock, so no completion is being matched against them.
     */
    void rollback(long upTo) {
        if (upTo == reserved) {
            return;
        }
        boolean held = consumerLock.heldByCurrentThread();
        if (!held) {
            consumerLock.lock(this);
        }
        try {
            for (long c = upTo; c < reserved; c++) {
                releaseEntry((int) c & mask);
            }
            reserved = upTo;
            TAIL.setRelease(this, upTo);
        } finally {
            if (!held) {
                consumerLock.unlock();
            }
        }
    }

    private void grow() {
        boolean held = consumerLock.heldByCurrentThread();
        if (!held) {
            consumerLock.lock(this);
        }
        try {
            int size = mask + 1;
            long h = (long) HEAD.getAcquire(this);
            long[] newIds = new long[size * 2];
            NativeResource[] newResources = new NativeResource[size * 2 * stride];
            int[] newCounts = new int[size * 2];
            int newMask = size * 2 - 1;
            for (long c = h; c < reserved; c++) {
                int from = (int) c & mask;
                int to = (int) c & newMask;
                newIds[to] = ids[from];
                newCounts[to] = counts[from];
                System.arraycopy(resources, from * stride, newResources, to * stride, stride);
            }
            ids = newIds;
            resources = newResources;
            counts = newCounts;
            mask = newMask;
        } finally {
            if (!held) {
                consumerLock.unlock();
            }
        }
    }

    // ---- consumer side (under the consumer lock) ----

    /**
     * Gives back every request from the head up to and including the first one with id {@code wrId}: a
     * completion on an in-order queue completed all of them.
     *
     * @return whether an entry had that id (when none has, nothing is given back)
     */
    boolean retireThrough(long wrId) {
        long h = (long) HEAD.getOpaque(this);
        long t = (long) TAIL.getAcquire(this);
        for (long c = h; c < t; c++) {
            if (ids[(int) c & mask] == wrId && counts[(int) c & mask] != DONE) {
                for (long d = h; d <= c; d++) {
                    releaseEntry((int) d & mask);
                }
                HEAD.setRelease(this, c + 1);
                return true;
            }
        }
        return false;
    }

    /**
     * Gives back only the first request with id {@code wrId}, for an SRQ whose requests complete on
     * several QPs in any order.
     *
     * @return whether an entry had that id
     */
    boolean retireOne(long wrId) {
        long h = (long) HEAD.getOpaque(this);
        long t = (long) TAIL.getAcquire(this);
        for (long c = h; c < t; c++) {
            int i = (int) c & mask;
            if (ids[i] == wrId && counts[i] != DONE) {
                releaseEntry(i);
                counts[i] = DONE;
                while (h < t && counts[(int) h & mask] == DONE) {
                    counts[(int) h & mask] = 0;
                    h++;
                }
                HEAD.setRelease(this, h);
                return true;
            }
        }
        return false;
    }

    /** {@return whether a published request not given back has id {@code wrId}} */
    boolean contains(long wrId) {
        long t = (long) TAIL.getAcquire(this);
        for (long c = (long) HEAD.getOpaque(this); c < t; c++) {
            int i = (int) c & mask;
            if (ids[i] == wrId && counts[i] != DONE) {
                return true;
            }
        }
        return false;
    }

    /** Gives back every request: the queue was destroyed or reset, so none of them runs any more. */
    void retireAll() {
        long t = (long) TAIL.getAcquire(this);
        for (long c = (long) HEAD.getOpaque(this); c < t; c++) {
            releaseEntry((int) c & mask);
        }
        HEAD.setRelease(this, t);
    }

    /**
     * Gives back the requests' leases on objects of one class, keeping the entries: a QP about to close
     * lets go of its memory windows, which must be deallocated before it is destroyed.
     */
    void releaseAll(Class<? extends NativeResource> type) {
        long t = (long) TAIL.getAcquire(this);
        for (long c = (long) HEAD.getOpaque(this); c < t; c++) {
            int i = (int) c & mask;
            int n = counts[i];
            for (int k = 0; k < n; k++) {
                NativeResource r = resources[i * stride + k];
                if (type.isInstance(r)) {
                    resources[i * stride + k] = null;
                    r.releaseWork();
                }
            }
        }
    }

    private void releaseEntry(int i) {
        int n = counts[i];
        int base = i * stride;
        for (int k = 0; k < n; k++) {
            NativeResource r = resources[base + k];
            if (r != null) {
                resources[base + k] = null;
                r.releaseWork();
            }
        }
        counts[i] = 0;
    }

    @Override
    public String toString() {
        return "WorkRing[" + outstanding() + " outstanding of " + (mask + 1) + "]";
    }
}
