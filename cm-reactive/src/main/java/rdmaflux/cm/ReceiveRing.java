package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;

import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.ReceiveRequests;

/**
 * One connection's own receive buffers, posted on its queue pair: one region, one {@link ReceiveSlot} per
 * buffer, the stack of slots the application released, and the batch that reposts them.
 *
 * <p>Threads: made on the CM loop; the application pushes released slots on any thread (a compare-and-set,
 * never the lock); the holder of the connection's {@link ConnectionLock} takes them off, writes their
 * reposts and posts them as one chain ({@code ibv_post_recv}) before letting go.
 */
final class ReceiveRing implements Receives {
    private final ConnectionLock lock;
    private final QueuePair qp;
    private final int size;
    private final MemoryRegion mr;
    private final ReceiveSlot[] slots;
    private final ReceiveRequests batch;
    /** The slot of each request written to {@link #batch} and not posted yet; guarded by the lock. */
    private final ReceiveSlot[] reposting;
    private int reposts;
    /** Slots the application released, for the lock's holder, linked through {@link ReceiveSlot#nextReleased}. */
    private final ReleasedSlots releasedSlots = new ReleasedSlots();
    /** Told how many receives were posted, for the connection's count of outstanding work requests. */
    private final IntConsumer posted;

    /**
     * CM loop: allocates and registers {@code count} buffers of {@code size} bytes in {@code pd}; nothing is
     * posted before {@link #postAll()}.
     *
     * @param lock the connection's lock
     * @param pd the protection domain of {@code qp}
     * @param qp the connection's queue pair
     * @param arena where the buffers live
     * @param count how many buffers
     * @param size the size of each
     * @param posted told how many receives were posted
     */
    ReceiveRing(ConnectionLock lock, ProtectionDomain pd, QueuePair qp, Arena arena, int count, int size,
                IntConsumer posted) {
        this.lock = lock;
        this.qp = qp;
        this.size = size;
        this.posted = posted;
        MemorySegment memory = BufferSlabs.allocate(arena, (long) size * count, 64);
        mr = pd.register(memory);
        slots = new ReceiveSlot[count];
        reposting = new ReceiveSlot[count];
        batch = new ReceiveRequests(count, 1);
        for (int i = 0; i < count; i++) {
            slots[i] = new ReceiveSlot(this, i, memory.asSlice((long) size * i, size));
        }
    }

    /** CM loop, once: posts every buffer. */
    void postAll() {
        for (int i = 0; i < slots.length; i++) {
            batch.set(i, TAG | i).sge(i, 0, mr, (long) size * i, size);
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

    @Override
    public boolean takeReleased(boolean dead, CreditWindow window) {
        boolean credited = false;
        for (ReceiveSlot s = releasedSlots.takeAll(); s != null; ) {
            ReceiveSlot next = s.nextReleased;
            s.nextReleased = null;
            if (dead || qp.isClosed()) {
                s.state(ReceiveSlot.DEAD);
                if (s.counted) {
                    window.dropped();
                }
            } else {
                repost(s);
                if (s.counted) {
                    window.released();
                    credited = true;
                }
            }
            s = next;
        }
        return credited;
    }

    @Override
    public void repost(ReceiveSlot slot) {
        slot.state(ReceiveSlot.POSTED);
        int i = reposts++;
        reposting[i] = slot;
        batch.set(i, TAG | slot.index).sge(i, 0, mr, (long) size * slot.index, size);
    }

    @Override
    public void postReposts() {
        int n = reposts;
        if (n == 0) {
            return;
        }
        reposts = 0;
        int done = n;
        try {
            qp.postReceive(batch, n);
        } catch (RuntimeException e) {
            done = batch.lastPosted(); // the QP is closed or broken: the rest is never filled again
        }
        posted.accept(done);
        for (int i = 0; i < n; i++) {
            if (i >= done) {
                reposting[i].state(ReceiveSlot.DEAD);
            }
            reposting[i] = null;
        }
    }

    @Override
    public void close() {
        mr.close();
    }
}
