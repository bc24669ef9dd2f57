package rdmaflux.verbs;

import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Serialises the posts to one work queue, so that the order in which its {@link WorkRing} records requests
 * is the order the provider queues them. Uncontended it costs one compare-and-set and one store, allocates
 * nothing, and may be held across calls (an {@link ExtendedSendQueue} batch from {@code start} to
 * {@code complete}), which {@code synchronized} cannot. A thread that already holds it gets an
 * {@link IllegalStateException} instead of waiting for itself forever.
 */
final class PostLock {
    private final AtomicReference<Thread> owner = new AtomicReference<>();

    /**
     * Takes the lock, waiting for another thread's post (or batch) to end.
     *
     * @param queue what the lock guards, for the message
     * @throws IllegalStateException when this thread holds it already (a post inside an open batch)
     */
    void lock(Object queue) {
        Thread me = Thread.currentThread();
        if (!owner.compareAndSet(null, me)) {
            contended(me, queue);
        }
    }

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
