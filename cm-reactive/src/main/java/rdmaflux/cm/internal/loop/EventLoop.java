package rdmaflux.cm.internal.loop;

import rdmaflux.cm.internal.util.CmLog;

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
 * readable. All state a loop owns is touched only on its thread, so it needs no locks. The thread is a
 * {@link LoopThread}: Reactor's {@code block()} throws there instead of hanging the loop.
 *
 * <p>{@link #shutdown()} ends the thread after the tasks queued before it; {@link #terminated()} then
 * completes, once the subclass let go of its native objects ({@link #onExit()}).
 *
 * <p>Busy polling: while the subclass says it {@link #spins()}, a turn is {@link #spin()} (which polls
 * without a system call) and the task queue; the descriptors are polled without waiting, and the timers
 * looked at (which reads the clock), only every {@link #DESCRIPTOR_TURNS} turns, and a turn that found
 * nothing ends with {@link Thread#onSpinWait()}. {@link #execute} then skips the wake-up write: the loop
 * looks at its task queue on every turn anyway.
 */
public abstract class EventLoop implements Executor, Timers {

    /** A timer of this loop; cancelled from any thread, fired and removed on the loop. */
    private static final class Timer implements Disposable, Comparable<Timer> {
        /** Written before the timer is queued: by its creator, or by the loop thread when it re-arms it. */
        long deadline;
        final Runnable task;
        volatile boolean cancelled;
        /** Whether it is in the loop's timer queue; loop thread only. */
        boolean queued;

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

    /**
     * While spinning, the descriptors are polled (without waiting) and the timers looked at once every this
     * many turns: often enough that a loop's event-driven CQs, CM events and timers wait microseconds, not
     * milliseconds, rarely enough that the system call and the clock read are not the spinning turn's main
     * cost.
     */
    static final int DESCRIPTOR_TURNS = 64;

    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    /** Loop thread only. */
    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    private final Poller poller = new Poller();
    private final LoopThread thread;
    private final Sinks.Empty<Void> terminated = Sinks.empty();
    private volatile boolean running = true;
    /**
     * Set while the loop spins and never blocks in {@code poll(2)}: {@link #execute} need not write the
     * wake-up eventfd. Cleared before the loop checks its task queue and blocks, so a task queued
     * concurrently is either seen by that check or wakes the wait (both sides are volatile accesses).
     */
    private volatile boolean spinning;

    EventLoop(String name) {
        this.thread = new LoopThread(name, this::run);
    }

    final void start() {
        thread.start();
    }

    /** {@return whether the caller is this loop's thread} */
    public final boolean inLoop() {
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
        if (!spinning && !inLoop()) {
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
    @Override
    public final Disposable schedule(Runnable task, long delayNanos) {
        Timer t = new Timer(System.nanoTime() + delayNanos, task);
        execute(() -> {
            t.queued = true;
            timers.add(t);
        });
        return t;
    }

    /**
     * Re-arms a timer of this loop that has fired, on the loop thread, without allocating: periodic work
     * (keepalive ticks) costs nothing per period. Anything else (another timer, one still queued, a call from
     * another thread) schedules a new timer, as {@link #schedule} does; a cancelled timer stays cancelled.
     */
    @Override
    public final Disposable rearm(Disposable fired, Runnable task, long delayNanos) {
        if (fired instanceof Timer t && t.task == task && !t.queued && inLoop()) {
            if (!t.cancelled) {
                t.deadline = System.nanoTime() + delayNanos;
                t.queued = true;
                timers.add(t);
            }
            return t;
        }
        return schedule(task, delayNanos);
    }

    /**
     * A delay on this loop's timers, for operators that need a clock whatever scheduler the user chose.
     *
     * @param delay how long
     * @return emits {@code 0} on the loop thread after {@code delay} from its subscription; a cancel
     *         cancels the timer
     */
    public final reactor.core.publisher.Mono<Long> delay(java.time.Duration delay) {
        long nanos = delay.toNanos();
        return reactor.core.publisher.Mono.create(sink -> sink.onDispose(schedule(() -> sink.success(0L), nanos)));
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

    /** {@return whether the loop busy polls now: turns of {@link #spin()} instead of waiting} */
    boolean spins() {
        return false;
    }

    /**
     * One busy-polling turn's work, without a system call; called on every turn while {@link #spins()},
     * and after {@link #onReady} on the other turns.
     *
     * @return whether it found anything to do (a turn that found nothing ends with a spin-wait hint)
     */
    boolean spin() {
        return false;
    }

    /** Loop thread, last: frees what the subclass owns. */
    void onExit() {
    }

    private void run() {
        boolean[] ready = new boolean[0];
        int turns = 0;
        try {
            while (running) {
                boolean ranTasks = runTasks();
                if (!running) {
                    break;
                }
                try {
                    if (spins()) {
                        spinning = true;
                        boolean found = spin() | ranTasks;
                        if (++turns < DESCRIPTOR_TURNS) {
                            if (!found && tasks.isEmpty()) {
                                spinWait();
                            }
                            continue;
                        }
                        turns = 0;
                    } else {
                        // Before the task queue is read for the timeout: see `spinning`.
                        spinning = false;
                    }
                    int[] fds = fds();
                    if (ready.length < fds.length) {
                        ready = new boolean[fds.length * 2];
                    }
                    poller.await(fds, ready, spinning || !tasks.isEmpty() ? 0 : timeout());
                    onReady(ready);
                    if (!spinning) {
                        spin(); // handlers just registered or woken are polled once more this turn
                    }
                    fireTimers();
                } catch (Throwable e) {
                    // A loop that dies strands every connection on it; log and keep going.
                    CmLog.LOG.log(Level.ERROR, "event loop " + thread.getName() + " failed an iteration", e);
                }
            }
        } finally {
            spinning = false;
            try {
                onExit();
            } catch (Throwable e) {
                CmLog.LOG.log(Level.WARNING, "closing " + thread.getName() + " failed", e);
            }
            poller.close();
            terminated.tryEmitEmpty();
        }
    }

    /**
     * The pause of a spinning turn that found nothing. Under a hypervisor (and qemu's TCG) PAUSE hands the
     * CPU to another virtual CPU; on hardware it lets the sibling hyperthread run. A method of its own because
     * BlockHound counts {@link Thread#onSpinWait()} as blocking: its integration allows it here, and only
     * here, on the loop thread.
     */
    private static void spinWait() {
        Thread.onSpinWait();
    }

    /** {@return whether a task ran} */
    private boolean runTasks() {
        Runnable t = tasks.poll();
        if (t == null) {
            return false;
        }
        do {
            try {
                t.run();
            } catch (Throwable e) {
                CmLog.LOG.log(Level.ERROR, "task failed on " + thread.getName(), e);
            }
        } while ((t = tasks.poll()) != null);
        return true;
    }

    /** The wait for the next turn: until the next timer's deadline, or forever. */
    private int timeout() {
        Timer next;
        while ((next = timers.peek()) != null && next.cancelled) {
            timers.poll();
        }
        if (next == null) {
            return -1;
        }
        long ms = Math.max(0, (next.deadline - System.nanoTime() + 999_999) / 1_000_000);
        return (int) Math.min(ms, Integer.MAX_VALUE);
    }

    private void fireTimers() {
        if (timers.isEmpty()) {
            return; // no clock read: a spinning turn comes here every time
        }
        long now = System.nanoTime();
        Timer t;
        while ((t = timers.peek()) != null && (t.cancelled || t.deadline - now <= 0)) {
            timers.poll();
            t.queued = false;
            if (!t.cancelled) {
                try {
                    t.task.run();
                } catch (Throwable e) {
                    CmLog.LOG.log(Level.ERROR, "timer failed on " + thread.getName(), e);
                }
            }
        }
    }
}
