package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.memory.BufferSlabs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;

import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.ReceiveRequests;

/**
 * One connection's own receive buffers, posted on its queue pair: one region, one {@link ReceiveSlot} per
 * buffer, the stack of slots the application released, and the batch that reposts them.
 *
 * <p>Reposts in batches: with the credits protocol, the buffers of released data messages are posted
 * {@link #repostBatch} at a time, and their credits count as owed only once posted, so the peer never
 * sends into a buffer that is not posted. One {@code ibv_post_recv} per batch instead of one per message
 * (a ping-pong otherwise posts one receive per round trip on each side). The batch waits only while the
 * peer still has credits for at least a batch of messages ({@link #holds}); a control message's buffer,
 * which took no credit, and every buffer without the credits protocol, are posted at once, since the
 * peer's sends into them are bounded by other means.
 *
 * <p>Memory: a small ring is a block of the domain's {@link BufferSlabs} (one registration for many
 * connections), a large one a region of its own. A received message stays readable until the application
 * releases it, even after the connection ended, so when the queue pair is gone ({@link #close}) a slab's
 * block goes back for another connection only if no message of the ring is still held; otherwise it is
 * retired, never handed out again ({@link BufferSlabs.Block#retire()}).
 *
 * <p>Threads: made on the CM loop; the application pushes released slots on any thread (a compare-and-set,
 * never the lock); the holder of the connection's {@link ConnectionLock} takes them off, writes their
 * reposts and posts them as one chain ({@code ibv_post_recv}) before letting go, or keeps them for a
 * later holder's chain.
 */
public final class ReceiveRing implements Receives {
    private final ConnectionLock lock;
    private final QueuePair qp;
    private final int size;
    private final MemoryRegion mr;
    /** The ring's memory in {@link #mr}: a slab's block, or a registration of its own. */
    private final BufferSlabs.Block block;
    /** Where the ring starts in {@link #mr}. */
    private final long base;
    private final ReceiveSlot[] slots;
    private final ReceiveRequests batch;
    /** The slot of each request written to {@link #batch} and not posted yet; guarded by the lock. */
    private final ReceiveSlot[] reposting;
    /** Whether each written repost is of a message that took a credit, counted once it is posted. */
    private final boolean[] credited;
    private int reposts;
    /** The credited reposts posted together; 1 without the credits protocol. */
    private final int repostBatch;
    /** Whether a repost written and not posted took no credit: it is posted with the next chain, at once. */
    private boolean urgent;
    /** Set when the connection went away: what is written goes (and fails) at once. */
    private boolean dead;
    /** Slots the application released, for the lock's holder, linked through {@link ReceiveSlot#nextReleased}. */
    private final ReleasedSlots releasedSlots = new ReleasedSlots();
    /** Told how many receives were posted, for the connection's count of outstanding work requests. */
    private final IntConsumer posted;

    /**
     * CM loop: carves {@code count} buffers of {@code size} bytes from {@code slabs} (or registers them on
     * their own when too large for a slab); nothing is posted before {@link #postAll()}.
     *
     * @param lock the connection's lock
     * @param slabs the slabs of the protection domain of {@code qp}
     * @param qp the connection's queue pair
     * @param arena where the buffers live
     * @param count how many buffers
     * @param size the size of each
     * @param posted told how many receives were posted
     * @param repostBatch how many credited reposts are posted together (1: each at once)
     */
    ReceiveRing(ConnectionLock lock, BufferSlabs slabs, QueuePair qp, Arena arena, int count, int size,
                IntConsumer posted, int repostBatch) {
        if (repostBatch < 1) {
            throw new IllegalArgumentException("repost batch " + repostBatch);
        }
        this.repostBatch = repostBatch;
        this.lock = lock;
        this.qp = qp;
        this.size = size;
        this.posted = posted;
        block = slabs.carve(arena, (long) size * count);
        mr = block.region();
        base = block.offset();
        MemorySegment memory = block.memory();
        slots = new ReceiveSlot[count];
        reposting = new ReceiveSlot[count];
        credited = new boolean[count];
        batch = new ReceiveRequests(count, 1);
        for (int i = 0; i < count; i++) {
            slots[i] = new ReceiveSlot(this, i, memory.asSlice((long) size * i, size));
        }
    }

    /** CM loop, once: posts every buffer. */
    void postAll() {
        for (int i = 0; i < slots.length; i++) {
            batch.set(i, TAG | i).sge(i, 0, mr, base + (long) size * i, size);
        }
        qp.postReceive(batch, slots.length);
        posted.accept(slots.length);
    }

    @Override
    public ReceiveSlot slot(long wrId) {
        posted.accept(-1);
        return slots[(int) (wrId & ~TAG)];
    }

    @Override
    public void released(ReceiveSlot slot) {
        releasedSlots.push(slot);
        lock.offer();
    }

    @Override
    public boolean hasReleased() {
        return releasedSlots.any();
    }

    /** The credits of released slots count when their reposts are posted ({@link #postReposts}): returns false. */
    @Override
    public boolean takeReleased(boolean dead, CreditWindow window) {
        for (ReceiveSlot s = releasedSlots.takeAll(); s != null; ) {
            ReceiveSlot next = s.nextReleased;
            s.nextReleased = null;
            if (dead || qp.isClosed()) {
                s.state(ReceiveSlot.DEAD);
                if (s.counted) {
                    window.dropped();
                }
            } else {
                write(s, s.counted);
            }
            s = next;
        }
        if (dead) {
            this.dead = true;
        }
        return false;
    }

    /** A control message's buffer: it took no credit, so it goes with the next chain, at once. */
    @Override
    public void repost(ReceiveSlot slot) {
        write(slot, false);
    }

    private void write(ReceiveSlot slot, boolean tookCredit) {
        slot.state(ReceiveSlot.POSTED);
        if (!tookCredit) {
            urgent = true;
        }
        int i = reposts++;
        reposting[i] = slot;
        credited[i] = tookCredit;
        batch.set(i, TAG | slot.index).sge(i, 0, mr, base + (long) size * slot.index, size);
    }

    /**
     * Whether written credited reposts may wait for more: fewer than a batch, none urgent, and the peer still
     * has credits for a batch of messages ({@link CreditWindow#outstanding()}, some of which may be on their
     * way back to it), so it never waits for these.
     *
     * @param written reposts written and not posted
     * @param batch the batch size
     * @param urgent whether one of them took no credit
     * @param peerCredits the credits the peer has or will have without these
     * @return whether to keep them for a later chain
     */
    static boolean holds(int written, int batch, boolean urgent, int peerCredits) {
        return written < batch && !urgent && peerCredits >= batch;
    }

    @Override
    public boolean postReposts(CreditWindow window) {
        int n = reposts;
        if (n == 0 || (!dead && holds(n, repostBatch, urgent, window.outstanding()))) {
            return false;
        }
        reposts = 0;
        urgent = false;
        int done = n;
        try {
            qp.postReceive(batch, n);
        } catch (RuntimeException e) {
            done = batch.lastPosted(); // the QP is closed or broken: the rest is never filled again
        }
        posted.accept(done);
        boolean owed = false;
        for (int i = 0; i < n; i++) {
            ReceiveSlot s = reposting[i];
            reposting[i] = null;
            if (i >= done) {
                s.state(ReceiveSlot.DEAD);
                if (credited[i]) {
                    window.dropped();
                }
            } else if (credited[i]) {
                window.released(); // posted: its credit may go back to the peer
                owed = true;
            }
        }
        return owed;
    }

    /**
     * CM loop, once the queue pair is destroyed (or when it was never used): a region of its own is closed
     * (the memory stays readable while the application holds a message of it). A slab's block goes back to
     * its slab when no message of the ring is held any more; while one is (the application's, or a large
     * message's descriptor), the block is retired instead: its memory is never given to another connection,
     * and its slab is still deregistered once its other blocks are back.
     */
    @Override
    public void close() {
        for (ReceiveSlot s : slots) {
            if (s.state() == ReceiveSlot.DELIVERED) {
                block.retire();
                return;
            }
        }
        block.free();
    }
}
