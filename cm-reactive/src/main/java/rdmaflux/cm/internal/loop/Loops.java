package rdmaflux.cm.internal.loop;

import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaLoops;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The implementation of {@link RdmaLoops}, threads only (in the manner of Reactor Netty's
 * {@code LoopResources}): owns the CM loops (the connecting side's, and the servers', started by the first
 * server), the completion loops and the signal threads, hands completion loops out round robin, and tracks
 * the handles running on them so {@link #dispose()} can close them before ending the threads. What the
 * layers above keep per device for these loops (protection domains, device events, shared CQs) is not
 * here but in one {@link Attachment} they make on first use; the loops only end its life, once the last
 * handle is gone after {@link #dispose()} and before any thread ends, so it outlives every connection's
 * queue pair and regions.
 *
 * <p>Threads: any; the handle set is concurrent, the servers' CM loop and the attachment are guarded by
 * their locks, the rest immutable or atomic. The attachment is closed on the thread that stops the loops
 * (the one that released the last handle, or the one that disposed them with none left).
 */
public final class Loops implements RdmaLoops {
    private static final Object SHARED_LOCK = new Object();
    private static volatile Loops shared;
    /** Signal threads started before the shared loops, for them to adopt; guarded by {@link #SHARED_LOCK}. */
    private static SignalScheduler pendingSignals;

    private final String prefix;
    private final CmEventLoop cm;
    /** The servers' CM loop, started by the first server; guarded by {@link #cmLoops}. */
    private CmEventLoop serverCm;
    /** Set, under {@link #cmLoops}, once the CM loops are stopping: no server loop may start after. */
    private boolean cmStopped;
    private final Object cmLoops = new Object();
    private final CompletionLoop[] completions;
    /** Where the connections' signals run when their options name no scheduler; one thread per completion loop. */
    private final SignalScheduler signals;
    /** Where the connections' work that may take milliseconds runs. */
    private final Workers workers;
    private final AtomicInteger next = new AtomicInteger();
    private final Set<Disposable> handles = ConcurrentHashMap.newKeySet();
    private final Object attachmentLock = new Object();
    /** What the layers above keep for these loops, or {@code null}; guarded by {@link #attachmentLock}. */
    private Attachment attachment;
    /** Set, under {@link #attachmentLock}, once the attachment is closed: none may be made after. */
    private boolean attachmentClosed;
    private final Sinks.Empty<Void> terminated = Sinks.empty();
    private volatile boolean disposed;
    private final AtomicInteger stopping = new AtomicInteger();

    private Loops(String prefix, int completionLoops) {
        this(prefix, completionLoops, null);
    }

    /** @param signals the signal threads to adopt, or {@code null} for new ones */
    private Loops(String prefix, int completionLoops, SignalScheduler signals) {
        Objects.requireNonNull(prefix, "prefix");
        if (completionLoops < 1 || completionLoops > 64) {
            throw new IllegalArgumentException("completion loops must be 1..64, got " + completionLoops);
        }
        this.prefix = prefix;
        cm = new CmEventLoop(prefix + "-cm");
        completions = new CompletionLoop[completionLoops];
        for (int i = 0; i < completionLoops; i++) {
            completions[i] = new CompletionLoop(prefix + "-completion-" + i, i);
        }
        this.signals = signals != null ? signals : new SignalScheduler(prefix, completionLoops);
        this.workers = new Workers(prefix);
        // The signal threads end last: the connections' final signals run there.
        Runnable end = () -> {
            this.signals.dispose();
            workers.shutdown();
            terminated.tryEmitEmpty();
        };
        Flux.fromArray(completions).flatMap(EventLoop::terminated).then(cm.terminated())
                .then(Mono.defer(this::serverCmTerminated))
                .subscribe(null, e -> end.run(), end);
    }

    public static Loops create(String prefix, int completionLoops) {
        return new Loops(prefix, completionLoops);
    }

    public static Loops shared() {
        Loops l = shared;
        if (l == null || l.disposed) {
            synchronized (SHARED_LOCK) {
                l = shared;
                if (l == null || l.disposed) {
                    SignalScheduler adopted = pendingSignals != null && !pendingSignals.isDisposed() ? pendingSignals : null;
                    l = new Loops("rdmaflux", DEFAULT_COMPLETION_LOOPS, adopted);
                    pendingSignals = null;
                    shared = l;
                }
            }
        }
        return l;
    }

    /**
     * The default scheduler of options that name no loops: the shared loops' signal threads. Without the
     * shared loops (none made yet, or disposed) it starts the signal threads alone, for the next shared
     * loops to adopt, so that asking options for their scheduler never needs rdma-core.
     *
     * @return the scheduler
     */
    public static reactor.core.scheduler.Scheduler sharedScheduler() {
        // Disposed shared loops keep their signal threads until their other threads ended: their
        // connections' last signals run there, not on threads started for them now.
        Loops l = shared;
        if (l != null && !l.signals.isDisposed()) {
            return l.signals;
        }
        synchronized (SHARED_LOCK) {
            l = shared;
            if (l != null && !l.signals.isDisposed()) {
                return l.signals;
            }
            if (pendingSignals == null || pendingSignals.isDisposed()) {
                pendingSignals = new SignalScheduler("rdmaflux", DEFAULT_COMPLETION_LOOPS);
            }
            return pendingSignals;
        }
    }

    /**
     * State a layer above keeps for the life of some loops (the per-device resources: the loops cannot
     * name them, they are below that layer). The loops close it once, after every handle on them released
     * what it had and before their threads end, so nothing in it is closed while a work request of theirs
     * may still use it.
     */
    public interface Attachment {
        /** Closes what it holds; called once, by the loops as they stop. Failures are logged, not thrown. */
        void close();
    }

    /**
     * The attachment of these loops, made on first use; any thread. One kind per loops: the loops do not
     * know its type.
     *
     * @param <T> its type
     * @param type its type, to check the one made before
     * @param make makes it, once
     * @return the attachment
     * @throws IllegalStateException when the loops stopped and their attachment is closed
     */
    public <T extends Attachment> T attachment(Class<T> type, Function<Loops, T> make) {
        synchronized (attachmentLock) {
            if (attachmentClosed) {
                throw new IllegalStateException("these RdmaLoops are disposed");
            }
            if (attachment == null) {
                attachment = make.apply(this);
            }
            return type.cast(attachment);
        }
    }

    /** {@return whether the current thread is one of these loops' CM loops: the client's or the servers'} */
    public boolean inCmLoop() {
        if (cm.inLoop()) {
            return true;
        }
        synchronized (cmLoops) {
            return serverCm != null && serverCm.inLoop();
        }
    }

    /** {@return the CM loop of connections made by {@link RdmaConnection#connect}, of endpoints and groups} */
    public CmEventLoop cm() {
        return cm;
    }

    /**
     * The servers' CM loop: their listeners and the connections they accept, whose events arrive on the
     * listener's channel. Started by the first server, so a process that both accepts and connects, as
     * cmtime's client and server processes do, sets the two sides up on two threads (in the manner of
     * Reactor Netty's server select loop).
     *
     * @return the loop
     * @throws IllegalStateException when the loops are disposed and their threads ending
     */
    public CmEventLoop serverCm() {
        synchronized (cmLoops) {
            if (cmStopped) {
                throw new IllegalStateException("these RdmaLoops are disposed");
            }
            if (serverCm == null) {
                serverCm = new CmEventLoop(prefix + "-cm-server");
            }
            return serverCm;
        }
    }

    /** Once the CM loop ended: the server loop's end, if it was started; none may start after. */
    private Mono<Void> serverCmTerminated() {
        synchronized (cmLoops) {
            cmStopped = true;
            return serverCm == null ? Mono.empty() : serverCm.terminated();
        }
    }

    /** {@return the completion loop for the next event-driven connection or endpoint: round robin} */
    public CompletionLoop nextCompletionLoop() {
        return completions[Math.floorMod(next.getAndIncrement(), completions.length)];
    }

    /**
     * The completion loop for the next connection. A busy-polling one goes to a loop that already has
     * busy-polling connections, if any: a spinning loop takes a CPU whether it polls one CQ or many, and
     * spinning threads beyond the CPUs there are starve everything else (the threads that deliver
     * signals, the application's), which then waits for the kernel to preempt a spinner. For more than
     * one spinning thread, give connections {@link ConnectionOptions.Builder#loops different loops}.
     * The caller tells {@link CompletionLoop#busyPollers(int)} {@code -1} when a busy-polling connection
     * leaves.
     *
     * @param busyPoll whether the connection busy polls ({@link ConnectionOptions.CompletionMode#BUSY_POLL})
     * @return its completion loop
     */
    public CompletionLoop nextCompletionLoop(boolean busyPoll) {
        if (!busyPoll) {
            return nextCompletionLoop();
        }
        synchronized (completions) {
            // Under the lock: two busy-polling connections made at once must not pick two idle loops.
            for (CompletionLoop c : completions) {
                if (c.busyPollers() > 0) {
                    c.busyPollers(1);
                    return c;
                }
            }
            CompletionLoop c = nextCompletionLoop();
            c.busyPollers(1);
            return c;
        }
    }

    @Override
    public int completionLoops() {
        return completions.length;
    }

    @Override
    public reactor.core.scheduler.Scheduler scheduler() {
        return signals;
    }

    /** {@return where the connections' work that may take milliseconds runs (never a loop): the loops' workers} */
    public reactor.core.scheduler.Scheduler worker() {
        return workers.scheduler();
    }

    /**
     * {@return the default scheduler of options on these loops: the signal threads; once they are shut
     * down (the loops disposed and their other threads ended), {@code Schedulers.immediate()}, so that a
     * call made after still gets its signal, such as the error that the loops are disposed}
     */
    public reactor.core.scheduler.Scheduler defaultScheduler() {
        return signals.isDisposed() ? reactor.core.scheduler.Schedulers.immediate() : signals;
    }

    /**
     * A handle starts running on these loops.
     *
     * @param handle closed by {@link #dispose()} if still running
     * @throws IllegalStateException when the loops are disposed
     */
    public void track(Disposable handle) {
        handles.add(handle);
        if (disposed) {
            handles.remove(handle);
            if (handles.isEmpty()) {
                stop();
            }
            throw new IllegalStateException("these RdmaLoops are disposed");
        }
    }

    /** A handle released everything it had on the loops (called on the CM loop). */
    public void untrack(Disposable handle) {
        if (handles.remove(handle) && disposed && handles.isEmpty()) {
            stop();
        }
    }

    @Override
    public void dispose() {
        if (disposed) {
            return;
        }
        disposed = true;
        for (Disposable h : handles) {
            h.dispose();
        }
        if (handles.isEmpty()) {
            stop();
        }
    }

    /**
     * Ends the threads, once: the completion loops first, then the CM loops, which close their channels. The
     * attachment (the per-device protection domains) goes first: every connection on the loops has destroyed
     * its queue pair and closed its regions by now (it is untracked only then).
     */
    private void stop() {
        if (stopping.getAndIncrement() != 0) {
            return;
        }
        closeAttachment();
        for (CompletionLoop c : completions) {
            c.shutdown();
        }
        CmEventLoop server;
        synchronized (cmLoops) {
            cmStopped = true;
            server = serverCm;
        }
        Runnable stopCm = () -> {
            if (server != null) {
                server.shutdown();
            }
            cm.shutdown();
        };
        Flux.fromArray(completions).flatMap(EventLoop::terminated).then()
                .subscribe(null, e -> stopCm.run(), stopCm);
    }

    private void closeAttachment() {
        Attachment a;
        synchronized (attachmentLock) {
            attachmentClosed = true;
            a = attachment;
            attachment = null;
        }
        if (a == null) {
            return;
        }
        try {
            a.close();
        } catch (RuntimeException e) {
            // The threads must still end: a failed close leaks what it held, not the loops.
            CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + a + " failed", e);
        }
    }

    @Override
    public boolean isDisposed() {
        return disposed;
    }

    /**
     * Completes when every thread has ended: each loop signals as its last act, so the threads are joined
     * (on a virtual thread, never on a loop thread) before this completes.
     */
    @Override
    public Mono<Void> onDispose() {
        return terminated.asMono().then(afterJoining(prefix + "-join", () -> {
            Thread[] t = threads();
            workers.await();
            return t;
        }));
    }

    /**
     * Completes once the threads have ended, waited for by a virtual thread of its own. Not on Reactor's
     * {@code boundedElastic()}: a waiter there is lost to whoever shuts Reactor's shared schedulers down
     * ({@code Schedulers.shutdownNow()}), and the loops' end would never be signalled.
     *
     * @param name the waiting thread's name
     * @param threads which threads, asked once the wait starts (may wait for other work first)
     * @return completes on the waiting thread; fails if it is interrupted
     */
    static Mono<Void> afterJoining(String name, java.util.function.Supplier<Thread[]> threads) {
        return Mono.create(sink -> Thread.ofVirtual().name(name).start(() -> {
            try {
                join(threads.get());
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            sink.success();
        }));
    }

    /**
     * Waits until every thread has ended; never on a loop thread.
     *
     * @param threads the threads
     * @throws IllegalStateException when interrupted
     */
    static void join(Thread[] threads) {
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + t.getName() + " to end", e);
            }
        }
    }

    /** {@return the completion loops (tests check what they wait on)} */
    public CompletionLoop[] completionLoopsForTest() {
        return completions.clone();
    }

    /** {@return every completion loop, for what concerns them all (a removed device's channels); any thread} */
    public java.util.List<CompletionLoop> completionLoopList() {
        return java.util.List.of(completions);
    }

    /**
     * {@return the CM loop the calling thread runs: the client's or the servers'}
     *
     * @throws IllegalStateException when called from another thread
     */
    public CmEventLoop currentCm() {
        if (cm.inLoop()) {
            return cm;
        }
        synchronized (cmLoops) {
            if (serverCm != null && serverCm.inLoop()) {
                return serverCm;
            }
        }
        throw new IllegalStateException("not on a CM loop of " + this);
    }

    /**
     * {@return every thread of these loops (tests check they end): the CM loop, the completion loops, the
     * signal threads, then the servers' CM loop if it was started}
     */
    public Thread[] threads() {
        CmEventLoop server;
        synchronized (cmLoops) {
            server = serverCm;
        }
        Thread[] signalThreads = signals.threads();
        Thread[] t = new Thread[completions.length + 1 + signalThreads.length + (server == null ? 0 : 1)];
        t[0] = cm.thread();
        for (int i = 0; i < completions.length; i++) {
            t[i + 1] = completions[i].thread();
        }
        System.arraycopy(signalThreads, 0, t, completions.length + 1, signalThreads.length);
        if (server != null) {
            t[t.length - 1] = server.thread();
        }
        return t;
    }
}
