package rdmaflux.cm.internal.loop;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.Exceptions;
import reactor.core.Scannable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The default {@link ConnectionOptions#scheduler() scheduler} of a set of {@link RdmaLoops}: where
 * user-visible signals run when the options name no scheduler of their own. A few
 * {@link SignalThread}s ({@code prefix-signal-N}), each worker pinned to one of them, as Reactor's
 * parallel scheduler pins its workers.
 *
 * <p>What it adds to Reactor's schedulers: a worker hands a task to its thread without allocating,
 * whenever the worker's previous undelayed task has started, which is how {@code publishOn} schedules its
 * drain. So a connection's {@code receive()} hops from the completion loop to the application's thread
 * with no garbage per message, where {@code Schedulers.parallel()} makes a task object per hop.
 * Delayed and periodic tasks wait on a timer thread of its own ({@code prefix-signal-timer}, started by the
 * first of them), then run here. Not on Reactor's parallel scheduler: that one is shared, and whoever calls
 * {@code Schedulers.shutdownNow()} (rsocket-test's kit does, per transport pair) would drop the waits under
 * way, so a timeout on these threads would never fire.
 *
 * <p>One departure from Reactor's workers: a task that its worker's disposal caught before it started is
 * dropped, unless it reports itself cancelled ({@link Scannable.Attr#CANCELLED}); that one runs, as its
 * run can then only release what it holds. {@code publishOn}'s drain is such a task, and when a cancel
 * comes while the drain is scheduled but not started, the drain is the only place that discards what
 * {@code publishOn} holds (reactor-core#4396, open in 3.8.7): dropped, the messages and datagrams in its
 * queue would never give their receive buffers and credits back.
 *
 * <p>Threads: any thread schedules; tasks run on the signal threads. Disposed by its loops, after their
 * other threads ended, so the last signals of their connections still run.
 */
public final class SignalScheduler implements Scheduler {
    private final SignalThread[] threads;
    private final AtomicInteger next = new AtomicInteger();
    private final String prefix;
    /** Made by the first delayed task; guarded by {@code this}. */
    private ScheduledThreadPoolExecutor timer;
    /** The timer's thread once it started: the loops wait for it to end. */
    private volatile Thread timerThread;
    /** Set, under {@code this}, by {@link #dispose()}: no timer starts after. */
    private boolean timerStopped;

    /**
     * Starts the threads.
     *
     * @param prefix   the threads are {@code prefix-signal-N}
     * @param nThreads how many, at least 1
     */
    SignalScheduler(String prefix, int nThreads) {
        this.prefix = prefix;
        threads = new SignalThread[nThreads];
        for (int i = 0; i < nThreads; i++) {
            threads[i] = new SignalThread(prefix + "-signal-" + i);
            threads[i].start();
        }
    }

    private SignalThread nextThread() {
        return threads[Math.floorMod(next.getAndIncrement(), threads.length)];
    }

    @Override
    public Disposable schedule(Runnable task) {
        return submit(nextThread(), new OneShot(null, Schedulers.onSchedule(task)));
    }

    @Override
    public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        return delayed(nextThread(), null, task, delay, unit);
    }

    @Override
    public Disposable schedulePeriodically(Runnable task, long initialDelay, long period, TimeUnit unit) {
        return periodic(nextThread(), null, task, initialDelay, period, unit);
    }

    @Override
    public Worker createWorker() {
        return new SignalWorker(this, nextThread());
    }

    /** Ends the threads once what is queued has run; tasks scheduled after are refused. */
    @Override
    public void dispose() {
        for (SignalThread t : threads) {
            t.shutdown();
        }
        ScheduledThreadPoolExecutor t;
        synchronized (this) {
            timerStopped = true;
            t = timer;
        }
        if (t != null) {
            // A wait still under way would end in a refused submit: the signal threads are shut down.
            t.shutdownNow();
        }
    }

    @Override
    public boolean isDisposed() {
        return threads[0].isShutdown();
    }

    @Override
    public Mono<Void> disposeGracefully() {
        return Mono.fromRunnable(this::dispose).then(Loops.afterJoining(prefix + "-signal-join", this::threads));
    }

    /** {@return the threads, the timer's last once it started (the loops join them; tests check they end)} */
    public Thread[] threads() {
        Thread t = timerThread;
        if (t == null) {
            return threads.clone();
        }
        Thread[] all = java.util.Arrays.copyOf(threads, threads.length + 1, Thread[].class);
        all[threads.length] = t;
        return all;
    }

    /** {@return the timer, started now if it was not} @throws RejectedExecutionException once disposed */
    private synchronized ScheduledThreadPoolExecutor timer() {
        if (timerStopped) {
            throw Exceptions.failWithRejected();
        }
        if (timer == null) {
            timer = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, prefix + "-signal-timer");
                t.setDaemon(true);
                timerThread = t;
                return t;
            });
            // Cancelled timeouts (most of them: the awaited signal came) must not pile up until their time.
            timer.setRemoveOnCancelPolicy(true);
        }
        return timer;
    }

    private static Disposable cancelling(ScheduledFuture<?> f) {
        return Disposables.composite(() -> f.cancel(false));
    }

    private static <T extends TaskQueue.Task> T submit(SignalThread thread, T task) {
        try {
            thread.execute(task);
        } catch (RejectedExecutionException e) {
            throw Exceptions.failWithRejected(e);
        }
        return task;
    }

    private Disposable delayed(SignalThread thread, SignalWorker worker, Runnable task, long delay,
                               TimeUnit unit) {
        OneShot t = new OneShot(worker, Schedulers.onSchedule(task));
        if (delay <= 0) {
            return submit(thread, t);
        }
        t.timer = cancelling(timer().schedule(() -> {
            if (!t.isDisposed()) {
                submit(thread, t);
            }
        }, delay, unit));
        return t;
    }

    private Disposable periodic(SignalThread thread, SignalWorker worker, Runnable task, long initialDelay,
                                long period, TimeUnit unit) {
        Runnable decorated = Schedulers.onSchedule(task);
        Disposable.Swap cancel = Disposables.swap();
        // A run still queued or running when the next is due makes that one skip, as a fixed rate lets no
        // two runs of one task overlap.
        AtomicBoolean pending = new AtomicBoolean();
        // A period of 0 asks for runs back to back, which a fixed rate cannot take; 1 ns with the skip is that.
        Disposable periodicTimer = cancelling(timer().scheduleAtFixedRate(() -> {
            if (!cancel.isDisposed() && (worker == null || !worker.isDisposed()) && pending.compareAndSet(false, true)) {
                submit(thread, new OneShot(worker, () -> {
                    try {
                        if (!cancel.isDisposed()) {
                            decorated.run();
                        }
                    } finally {
                        pending.set(false);
                    }
                }));
            }
        }, unit.toNanos(Math.max(0, initialDelay)), Math.max(1, unit.toNanos(period)), TimeUnit.NANOSECONDS));
        cancel.update(periodicTimer);
        return cancel;
    }

    /**
     * Whether a task its worker's disposal caught runs anyway: it reports itself cancelled, so all its run
     * can do is release what it holds ({@code publishOn}'s drain; see the class comment).
     */
    static boolean releasesOnly(Runnable task) {
        return task instanceof Scannable s && Boolean.TRUE.equals(s.scan(Scannable.Attr.CANCELLED));
    }

    /** A task run once, unless disposed before it starts or its worker is (see {@link #releasesOnly}). */
    private static final class OneShot extends TaskQueue.Task implements Disposable {
        private final SignalWorker worker;
        private final Runnable task;
        private final AtomicBoolean done = new AtomicBoolean();
        /** The wait of a delayed task, cancelled with it; set before it can be disposed by the timer. */
        volatile Disposable timer;

        OneShot(SignalWorker worker, Runnable task) {
            this.worker = worker;
            this.task = task;
        }

        @Override
        public void run() {
            if (done.compareAndSet(false, true) && (worker == null || !worker.isDisposed() || releasesOnly(task))) {
                task.run();
            }
        }

        @Override
        public void dispose() {
            if (done.compareAndSet(false, true)) {
                Disposable d = timer;
                if (d != null) {
                    d.dispose();
                }
            }
        }

        @Override
        public boolean isDisposed() {
            return done.get();
        }
    }

    /**
     * A worker: its tasks run on one signal thread, in the order scheduled, none after {@link #dispose()}.
     * Its one {@link Reusable} task carries every undelayed task scheduled while it is free, so a worker
     * scheduled again only after its last task started (a {@code publishOn} drain) allocates nothing.
     */
    static final class SignalWorker implements Worker {
        private final SignalScheduler scheduler;
        private final SignalThread thread;
        private final Reusable reusable = new Reusable(this);
        private volatile boolean disposed;

        SignalWorker(SignalScheduler scheduler, SignalThread thread) {
            this.scheduler = scheduler;
            this.thread = thread;
        }

        /**
         * {@inheritDoc} The handle of a task the worker's reusable carrier took cancels the task the carrier
         * holds while it waits: dispose it before the task started, not after (Reactor's operators dispose
         * undelayed tasks' handles never, and their workers instead).
         */
        @Override
        public Disposable schedule(Runnable task) {
            if (disposed) {
                throw Exceptions.failWithRejected();
            }
            Runnable decorated = Schedulers.onSchedule(task);
            if (reusable.claim(decorated)) {
                try {
                    return submit(thread, reusable);
                } catch (RejectedExecutionException e) {
                    reusable.free();
                    throw e;
                }
            }
            return submit(thread, new OneShot(this, decorated));
        }

        @Override
        public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
            if (disposed) {
                throw Exceptions.failWithRejected();
            }
            return scheduler.delayed(thread, this, task, delay, unit);
        }

        @Override
        public Disposable schedulePeriodically(Runnable task, long initialDelay, long period, TimeUnit unit) {
            if (disposed) {
                throw Exceptions.failWithRejected();
            }
            return scheduler.periodic(thread, this, task, initialDelay, period, unit);
        }

        /** Tasks not started yet never run, except those that report themselves cancelled. */
        @Override
        public void dispose() {
            disposed = true;
        }

        @Override
        public boolean isDisposed() {
            return disposed;
        }
    }

    /** A worker's allocation-free carrier: holds one task from {@link #claim} until it starts. */
    private static final class Reusable extends TaskQueue.Task implements Disposable {
        private final SignalWorker worker;
        private final AtomicBoolean queued = new AtomicBoolean();
        /** Written by the claimant before it queues this, read by the signal thread after. */
        private volatile Runnable task;
        private volatile boolean cancelled;

        Reusable(SignalWorker worker) {
            this.worker = worker;
        }

        /** {@return whether this now carries {@code t}} false when it carries another task */
        boolean claim(Runnable t) {
            if (!queued.compareAndSet(false, true)) {
                return false;
            }
            cancelled = false;
            task = t;
            return true;
        }

        /** Gives up a claim whose task was refused. */
        void free() {
            task = null;
            queued.set(false);
        }

        @Override
        public void run() {
            Runnable t = task;
            boolean skip = cancelled || worker.isDisposed() && !releasesOnly(t);
            task = null;
            // Free before running: the task may schedule its successor, which takes this carrier again.
            queued.set(false);
            if (!skip) {
                t.run();
            }
        }

        @Override
        public void dispose() {
            cancelled = true;
        }

        @Override
        public boolean isDisposed() {
            return cancelled || worker.isDisposed();
        }
    }
}
