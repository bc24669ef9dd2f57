package rdmaflux.verbs;

import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Serialises the producers (posts) or the consumers (polls) of {@link WorkRing}s: posts to one work queue,
 * so that the ring records requests in the order the provider queues them; polls of one CQ, so that
 * completions are retired in the CQ's order. Uncontended it costs one compare-and-set and one release store
 * (half of {@code synchronized}, which the poll of an empty CQ notices), allocates nothing, and may be held
 * across calls (an {@link ExtendedSendQueue} batch from {@code start} to {@code complete}). Not reentrant: a
 * thread that holds it and asks again gets an {@link IllegalStateException} instead of waiting for itself.
 */
final class QueueLock {
    private final AtomicReference<Thread> owner = new AtomicReference<>();

    /**
     * Takes the lock, waiting for another thread to give it back.
     *
     * @param queue what the lock guards, for the message
     * @throws IllegalStateException when this thread holds it already (a post inside an open extended batch)
     */
    void lock(Object queue) {
        Thread me = Thread.currentThread();
        if (!owner.compareAndSet(null, me)) {
            contended(me, queue);
        }
    }

    /**
     * The wait for another poster or poller, bounded by its call (or its open extended batch). Kept apart
     * from {@link #lock} so that a tool that flags the spin and the park (as BlockHound does) can allow this
     * wait and no other.
     */
    private void contended(Thread me, Object queue) {
        for (int spins = 0; !owner.compareAndSet(null, me); spins++) {
            if (owner.get() == me) {
                throw new IllegalStateException("this thread is already posting to " + queue
                        + ": an ExtendedSendQueue batch is open (complete() or abort() it first)");
            }
            if (spins < 100) {
                Thread.onSpinWait();
            } else {
                // Another thread holds an extended batch open: its poster decides how long.
                LockSupport.parkNanos(10_000);
            }
        }
    }

    /** Gives the lock back; only its holder calls this. */
    void unlock() {
        owner.setRelease(null);
    }

    /** {@return whether the calling thread holds the lock} */
    boolean heldByCurrentThread() {
        return owner.get() == Thread.currentThread();
    }
}
