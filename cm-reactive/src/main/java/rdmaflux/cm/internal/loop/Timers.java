package rdmaflux.cm.internal.loop;

import reactor.core.Disposable;

/**
 * Where step timers run: an event loop's own timers (every {@link EventLoop} is one), or virtual time in
 * tests.
 *
 * <p>Threads: {@link #schedule} is called on the thread that owns the timers (the loop, for an event
 * loop); the task runs there too.
 */
@FunctionalInterface
public interface Timers {
    /**
     * Runs a task after a delay.
     *
     * @param task what to run when the delay has passed
     * @param delayNanos the delay
     * @return cancels the timer
     */
    Disposable schedule(Runnable task, long delayNanos);

    /**
     * Runs a task again after a delay, from within its timer's run: an event loop re-arms the same timer
     * without allocating; by default a new one is scheduled.
     *
     * @param fired the timer whose task is running
     * @param task that task
     * @param delayNanos the delay
     * @return cancels the timer
     */
    default Disposable rearm(Disposable fired, Runnable task, long delayNanos) {
        return schedule(task, delayNanos);
    }
}
