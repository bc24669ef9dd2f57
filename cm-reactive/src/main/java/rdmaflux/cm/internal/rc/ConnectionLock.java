package rdmaflux.cm.internal.rc;

import java.util.concurrent.locks.ReentrantLock;

/**
 * The lock of one RC connection's data path ({@link RcQueue}, {@link SendQueue}, {@link Rendezvous}), with
 * work that can wait for whoever holds it: a thread that hands over such work ({@link #offer()}) never
 * waits for the lock. If nobody holds it, the offering thread does the work at once; if somebody does, the
 * holder does it before letting go. What is deferred this way: received messages the application released
 * (their buffers reposted and their credits counted), and the doorbell of the send requests written while
 * the lock was held (one {@code ibv_post_send} for all of them, made just after the lock was let go, in
 * the order of the holds).
 *
 * <p>Why: a thread preempted while it holds the lock (on a loaded machine, or on emulated CPUs with a 4 ms
 * tick) made every releasing thread and the completion loop wait for it; measured in the sandbox, waits of
 * 15-40 ms, hundreds of them per minute of RSocket traffic.
 *
 * <p>Threads: any. The deferred work runs on the thread that holds the lock when it lets go, under the
 * lock.
 */
@SuppressWarnings("serial") // never serialized
public final class ConnectionLock extends ReentrantLock {

    /** The work that waits for the holder. */
    interface Deferred {
        /** {@return whether work was offered and not done yet; any thread} */
        boolean pending();

        /**
         * Does the offered work; under the lock, before it is let go.
         *
         * @return whether {@link #afterUnlock()} has work: then it is called once the lock was let go
         */
        boolean beforeUnlock();

        /** By the same thread, just after it let go of the lock: what need not hold it (a system call). */
        void afterUnlock();
    }

    private Deferred deferred;

    /**
     * Sets what is done before the lock is let go; once, before the lock is shared with other threads.
     *
     * @param work the deferred work
     */
    void deferred(Deferred work) {
        this.deferred = work;
    }

    /**
     * Takes the lock, waiting for its holder. Who waits here: the application's threads (a send, the release
     * of a large message), the large-message workers, and the loops' tasks that start a connection, post its
     * close or end it; the completion loop's drain never does ({@code tryLock}). A hold is short (requests
     * written, a batch of completions handled), so this is a deliberate, bounded wait. Overridden only to be
     * a method of this class, which BlockHound's integration allows without allowing every lock's wait.
     */
    @Override
    public void lock() {
        super.lock();
    }

    /**
     * Lets go of the lock; the outermost unlock first does the deferred work, and takes the lock again for
     * work offered while it was letting go (an offering thread that found the lock held left it here).
     */
    @Override
    public void unlock() {
        if (getHoldCount() > 1 || deferred == null) {
            super.unlock();
            return;
        }
        for (;;) {
            boolean after = false;
            try {
                after = deferred.beforeUnlock();
            } finally {
                super.unlock();
            }
            if (after) {
                deferred.afterUnlock();
            }
            if (!deferred.pending() || !tryLock()) {
                return; // nothing left, or a newer holder does it
            }
        }
    }

    /**
     * Lets go of a hold in which the holder wrote nothing (a poll that found no completion): the deferred
     * work is done only if some was offered, before or while it lets go; otherwise the lock is just let go,
     * without calling {@link Deferred#beforeUnlock()}. A busy-polling loop takes and lets go of the lock of
     * every connection it polls on every turn.
     */
    void unlockIdle() {
        if (getHoldCount() > 1 || deferred == null || deferred.pending()) {
            unlock();
            return;
        }
        super.unlock();
        if (deferred.pending() && tryLock()) {
            unlock(); // offered while it let go, by a thread that found the lock held
        }
    }

    /**
     * Any thread, after handing over deferred work: does it now if the lock is free, else leaves it to the
     * holder, who does it before letting go. Never waits.
     */
    void offer() {
        if (tryLock()) {
            unlock();
        }
    }
}
