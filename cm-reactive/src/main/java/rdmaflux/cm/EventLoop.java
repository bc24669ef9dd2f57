package rdmaflux.cm;

import java.lang.System.Logger.Level;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;

import reactor.core.Disposable;
import reactor.core.publisher.Sinks;
import rdmaflux.verbs.Poller;

/**
 * A dedicated thread that waits on file descriptors with a {@link Poller}, runs tasks handed to it, and
 * fires its own timers. Subclasses say which descriptors to watch and what to do when they are
 * readable. All state a loop owns is touched only on its thread, so it needs no locks.
 *
 * <p>{@link #shutdown()} ends the thread after the tasks queued before it; {@link #terminated()} then
 * completes, once the subclass let go of its native objects ({@link #onExit()}).
 */
abstract class EventLoop implements Executor {
    static final System.Logger LOG = System.getLogger("rdmaflux.cm");

    /** A timer of this loop; cancelled from any thread, fired and removed on the loop. */
    private static final class Timer implements Disposable, Comparable<Timer> {
        final long deadline;
        final Runnable task;
        volatile boolean cancelled;

        Timer(long deadline, Runnable task) {
            this.deadline = deadline;
            this.task = task;
        }

        @Override
        public void dispose() {
            cancelled = true;
        }

        @Override
        public boolean isDisposed() {
            return cancelled;
        }

        @Override
        public int compareTo(Timer o) {
            return Long.compare(deadline, o.deadline);
        }
    }

    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    /** Loop thread only. */
    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    private final Poller poller = new Poller();
    private final Thread thread;
    private final Sinks.Empty<Void> terminated = Sinks.empty();
    private volatile boolean running = true;

    EventLoop(String name) {
        this.thread = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
    }

    final void start() {
        thread.start();
    }

    /** {@return whether the caller is this loop's thread} */
    final boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** {@return the loop's thread (tests check it ends)} */
    final Thread thread() {
        return thread;
    }

    /** Runs {@code task} on the loop thread, after the tasks queued before it. */
    @Override
    public final void execute(Runnable task) {
        tasks.add(task);
        if (!inLoop()) {
            poller.wakeup();
        }
    }

    /**
     * Runs {@code task} on the loop thread after {@code delayNanos}, unless disposed before.
     *
     * @param task what to run
     * @param delayNanos how long from now
     * @return cancels the timer (any thread)
     */
    final Disposable schedule(Runnable task, long delayNanos) {
        Timer t = new Timer(System.nanoTime() + delayNanos, task);
        execute(() -> timers.add(t));
        return t;
    }

    /** Ends the thread after the tasks queued so far; any thread. */
    final void shutdown() {
        execute(() -> running = false);
    }

    /** {@return completes once the thread has ended} */
    final reactor.core.publisher.Mono<Void> terminated() {
        return terminated.asMono();
    }

    /** {@return the descriptors to wait on now} */
    abstract int[] fds();

    /**
     * Called with the readiness of {@link #fds()} after each wait.
     *
     * @param ready readiness per descriptor
     */
    abstract void onReady(boolean[] ready);

    /** {@return how long the next wait may last: -1 forever, 0 to only check (busy polling)} */
    int waitMillis() {
        return -1;
    }

    /** Loop thread, last: frees what the subclass owns. */
    void onExit() {
    }

    private void run() {
        boolean[] ready = new boolean[0];
        try {
            while (running) {
                Runnable t;
                while ((t = tasks.poll()) != null) {
                    try {
                        t.run();
                    } catch (Throwable e) {
                        LOG.log(Level.ERROR, "task failed on " + thread.getName(), e);
                    }
                }
                if (!running) {
                    break;
                }
                int[] fds = fds();
                if (ready.length < fds.length) {
                    ready = new boolean[fds.length * 2];
                }
                try {
                    poller.await(fds, ready, tasks.isEmpty() ? timeout() : 0);
                    onReady(ready);
                    fireTimers();
                } catch (Throwable e) {
                    // A loop that dies strands every connection on it; log and keep going.
                    LOG.log(Level.ERROR, "event loop " + thread.getName() + " failed an iteration", e);
                }
            }
        } finally {
            try {
                onExit();
            } catch (Throwable e) {
                LOG.log(Level.WARNING, "closing " + thread.getName() + " failed", e);
            }
            poller.close();
            terminated.tryEmitEmpty();
        }
    }

    /** The wait for the next turn: the subclass's, shortened to the next timer's deadline. */
    private int timeout() {
        int wait = waitMillis();
        Timer next;
        while ((next = timers.peek()) != null && next.cancelled) {
            timers.poll();
        }
        if (next == null || wait == 0) {
            return wait;
        }
        long ms = Math.max(0, (next.deadline - System.nanoTime() + 999_999) / 1_000_000);
        int timerWait = (int) Math.min(ms, Integer.MAX_VALUE);
        return wait < 0 ? timerWait : Math.min(wait, timerWait);
    }

    private void fireTimers() {
        long now = System.nanoTime();
        Timer t;
        while ((t = timers.peek()) != null && (t.cancelled || t.deadline - now <= 0)) {
            timers.poll();
            if (!t.cancelled) {
                try {
                    t.task.run();
                } catch (Throwable e) {
                    LOG.log(Level.ERROR, "timer failed on " + thread.getName(), e);
                }
            }
        }
    }
}
