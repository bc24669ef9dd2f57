package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.Datagram;
import rdmaflux.cm.internal.memory.BufferSlabs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.ReceiveRequests;

/**
 * A {@link UdQueue}'s receive buffers: one registered region cut into slots of the largest datagram plus its
 * GRH (the device writes the 40-byte GRH, or room for it, before every UD payload), the stack of free slots,
 * and the receive credits that bound what is posted.
 *
 * <p><b>Credits.</b> Of the ring's {@code size} slots, at most {@code size} datagrams are either posted as
 * receives or delivered and not yet seen by every subscriber ({@link #delivered()} until {@link #returned()}).
 * A free slot is posted again only while a credit is free, so a subscriber that stops requesting leaves the
 * ring empty after {@code size} datagrams rather than its buffers being reused under it. A slot is free again
 * as soon as its completion is polled: the datagram is copied out of it before it is delivered.
 *
 * <p>Unlike an RC connection's {@code ReceiveRing} there is no lock, no peer credit and no message lent out of
 * its buffer, so the two share nothing but the idea.
 *
 * <p>Threads: posting and completions on the queue's completion loop (the CM loop posts the first receives,
 * before the queue is handed to the completion loop); {@link #delivered()}, {@link #returned()} and
 * {@link #posted()} from any thread.
 */
final class UdReceiveRing {
    /** Marks a receive's work request id; a send's is its buffer's index, below it. */
    static final long TAG = 1L << 62;

    /** Where the ring's receives go: the queue pair, or a record in tests. */
    interface Poster {
        /**
         * Posts a receive into each of {@code slots[0..n)}, in that order.
         *
         * @param slots the slots
         * @param n how many
         * @throws RuntimeException when the queue pair refused them; {@link #lastPosted()} says how many
         *         went before the refusal
         */
        void post(int[] slots, int n);

        /** {@return how many receives the last {@link #post} posted} */
        int lastPosted();
    }

    private final int size;
    private final int slotSize;
    /** The slots' memory; {@code null} for a ring of no slots. */
    private final MemoryRegion region;
    private final Poster poster;
    /** Free slots, a stack: the lowest index on top at first, so the first receives fill the region in order. */
    private final int[] free;
    private int freeTop;
    /** The slots of the post being made, in order. */
    private final int[] posting;
    /** Written on the posting thread only; volatile for {@link #posted()}. */
    private volatile int posted;
    private final AtomicInteger undelivered = new AtomicInteger();

    /**
     * A ring of {@code size} slots.
     *
     * @param size how many slots (0: a queue that does not receive)
     * @param slotSize the bytes of each
     * @param region the slots' memory, {@code slotSize * size} bytes; {@code null} when no datagram is copied
     *        out (tests)
     * @param poster where receives go
     */
    UdReceiveRing(int size, int slotSize, MemoryRegion region, Poster poster) {
        this.size = size;
        this.slotSize = slotSize;
        this.region = region;
        this.poster = poster;
        this.free = new int[size];
        this.posting = new int[size];
        for (int i = 0; i < size; i++) {
            free[i] = size - 1 - i;
        }
        freeTop = size;
    }

    /**
     * CM loop: registers {@code size} slots for datagrams of up to {@code maxPayload} bytes in {@code pd} and
     * posts their receives on {@code qp}.
     *
     * @param pd the queue's protection domain
     * @param arena where the slots live
     * @param qp the queue pair the receives go to
     * @param size how many slots (0: none, and nothing is registered)
     * @param maxPayload the largest datagram payload
     * @return the ring; its region is the caller's to close ({@link #region()})
     */
    static UdReceiveRing register(ProtectionDomain pd, Arena arena, QueuePair qp, int size, int maxPayload) {
        int slotSize = slotSize(maxPayload);
        if (size == 0) {
            return new UdReceiveRing(0, slotSize, null, null);
        }
        MemoryRegion region = pd.register(BufferSlabs.allocate(arena, (long) slotSize * size, 64));
        return new UdReceiveRing(size, slotSize, region, new QpPoster(qp, region, size, slotSize));
    }

    /**
     * The bytes of one slot: the payload behind the GRH, rounded up to a cache line so that no two
     * receives share one.
     *
     * @param maxPayload the largest datagram payload
     * @return the slot size
     */
    static int slotSize(int maxPayload) {
        return (maxPayload + Datagram.GRH_BYTES + 63) & ~63;
    }

    /** {@return the work request id of a receive into {@code slot}} */
    static long wrId(int slot) {
        return TAG | slot;
    }

    /** {@return whether a completion with this work request id is a receive's} */
    static boolean isReceive(long wrId) {
        return (wrId & TAG) != 0;
    }

    /** {@return the slot of a receive's work request id} */
    static int slotOf(long wrId) {
        return (int) (wrId & ~TAG);
    }

    /** {@return where {@code slot} starts in the region} */
    long offset(int slot) {
        return (long) slotSize * slot;
    }

    /** {@return how many slots} */
    int size() {
        return size;
    }

    /** {@return the slots' memory, to copy a received datagram out of} */
    MemorySegment memory() {
        return region.segment();
    }

    /** {@return the registered slots, or {@code null} for a ring of none; closed by the queue} */
    MemoryRegion region() {
        return region;
    }

    /** {@return receives posted right now; any thread} */
    int posted() {
        return posted;
    }

    /**
     * How many receives may be posted: the free slots, but no more than the credits not held by posted or
     * undelivered datagrams.
     *
     * @param free slots free
     * @param size slots in all
     * @param posted receives posted
     * @param undelivered datagrams delivered and not seen by every subscriber yet
     * @return how many to post now (0 or more)
     */
    static int postable(int free, int size, int posted, int undelivered) {
        return Math.max(0, Math.min(free, size - posted - undelivered));
    }

    /**
     * Posting thread: posts a receive for every free credit. A refused post keeps its slots free (the queue
     * pair is in error or being destroyed; what it took before the refusal stays posted).
     *
     * @return the refusal, or {@code null} when every receive due was posted (or none was due)
     */
    RuntimeException replenish() {
        int n = postable(freeTop, size, posted, undelivered.get());
        if (n == 0) {
            return null;
        }
        for (int i = 0; i < n; i++) {
            posting[i] = free[--freeTop];
        }
        try {
            poster.post(posting, n);
            posted += n;
            return null;
        } catch (RuntimeException e) {
            int done = poster.lastPosted();
            posted += done;
            // The stack gives the slots back in the order they were taken, so a retry posts the same ones.
            for (int i = n - 1; i >= done; i--) {
                free[freeTop++] = posting[i];
            }
            return e;
        }
    }

    /**
     * Posting thread: the receive with work request id {@code wrId} completed (successfully or not); its slot
     * is free again once the caller copied its datagram out.
     *
     * @param wrId the completion's work request id (a receive's: {@link #isReceive})
     * @return the slot
     */
    int completed(long wrId) {
        int slot = slotOf(wrId);
        posted--;
        free[freeTop++] = slot;
        return slot;
    }

    /** Any thread: a received datagram went out to the subscribers; it holds a credit until {@link #returned()}. */
    void delivered() {
        undelivered.incrementAndGet();
    }

    /** Any thread: a delivered datagram was seen by every subscriber; its credit is free. */
    void returned() {
        undelivered.decrementAndGet();
    }

    /** Posts a ring's receives on its queue pair, one {@code ibv_post_recv} per call. */
    private static final class QpPoster implements Poster {
        private final QueuePair qp;
        private final MemoryRegion region;
        private final ReceiveRequests batch;
        private final int slotSize;
        private int lastPosted;

        QpPoster(QueuePair qp, MemoryRegion region, int size, int slotSize) {
            this.qp = qp;
            this.region = region;
            this.batch = new ReceiveRequests(size, 1);
            this.slotSize = slotSize;
        }

        @Override
        public void post(int[] slots, int n) {
            lastPosted = 0;
            for (int i = 0; i < n; i++) {
                int slot = slots[i];
                batch.set(i, wrId(slot)).sge(i, 0, region, (long) slotSize * slot, slotSize);
            }
            try {
                qp.postReceive(batch, n);
                lastPosted = n;
            } catch (RuntimeException e) {
                lastPosted = batch.lastPosted(); // a provider's refusal part-way: the ones before it are posted
                throw e;
            }
        }

        @Override
        public int lastPosted() {
            return lastPosted;
        }
    }
}
