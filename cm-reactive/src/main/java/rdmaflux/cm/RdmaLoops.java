package rdmaflux.cm;

/**
 * The threads rdmaflux runs on, in the manner of Reactor Netty's {@code LoopResources}: a connection
 * manager loop (every rdma_cm call and event, the connection state machines and their step timers) for
 * the connections this process makes, and datagram endpoints and multicast groups; a second one for
 * servers (their listeners and the connections they accept), started by the first server, so that a
 * process that accepts and connects sets both sides up in parallel, as Reactor Netty's servers select on
 * their own threads; and N completion loops (each drains the CQs of the connections assigned to it, round robin, spread over
 * the device's completion vectors; busy polling spins only the loop of a busy connection).
 *
 * <p>Zero configuration uses {@link #shared()}. Give {@link ConnectionOptions.Builder#loops} a set of your
 * own to isolate connections or to size the completion side. {@link #dispose()} closes every connection
 * and server still running on the loops, then ends every thread; {@link #onDispose()} completes when they
 * have ended. Datagram endpoints and multicast run on the shared loops.
 *
 * <p>Loop threads run rdmaflux code only; user code runs on the options' scheduler, by default these loops'
 * own {@linkplain #scheduler() signal threads}.
 */
public interface RdmaLoops extends RdmaDisposable {

    /** The completion loops of {@link #shared()} and of {@link #create(String)}: the processors, at most 4. */
    int DEFAULT_COMPLETION_LOOPS = Math.max(1, Math.min(Runtime.getRuntime().availableProcessors(), 4));

    /**
     * The process-wide loops (threads {@code rdmaflux-cm}, {@code rdmaflux-completion-N},
     * {@code rdmaflux-signal-N} and, once a server is bound, {@code rdmaflux-cm-server}), created on first use. Once disposed, the next call creates new ones.
     *
     * @return the shared loops
     */
    static RdmaLoops shared() {
        return LoopsImplementation.sharedLoops();
    }

    /**
     * New loops with {@link #DEFAULT_COMPLETION_LOOPS} completion loops.
     *
     * @param prefix thread name prefix: threads are {@code prefix-cm}, {@code prefix-completion-N},
     *               {@code prefix-signal-N} and, once a server is bound, {@code prefix-cm-server}
     * @return the loops; their threads start now
     */
    static RdmaLoops create(String prefix) {
        return create(prefix, DEFAULT_COMPLETION_LOOPS);
    }

    /**
     * New loops.
     *
     * @param prefix thread name prefix: threads are {@code prefix-cm}, {@code prefix-completion-N},
     *               {@code prefix-signal-N} and, once a server is bound, {@code prefix-cm-server}
     * @param completionLoops how many completion threads, 1..64
     * @return the loops; their threads start now
     * @throws rdmaflux.verbs.RdmaException when rdma-core is unusable (no library)
     */
    static RdmaLoops create(String prefix, int completionLoops) {
        return LoopsImplementation.createLoops(prefix, completionLoops);
    }

    /** {@return how many completion loops there are} */
    int completionLoops();

    /**
     * {@return where the signals of connections and servers on these loops run when their options name no
     * scheduler ({@link ConnectionOptions#scheduler()}): the signal threads {@code prefix-signal-N}, one per
     * completion loop}
     *
     * <p>Non-blocking threads, as Reactor's parallel workers ({@code block()} there throws), each worker of
     * the scheduler on one of them. Unlike Reactor's schedulers, a worker scheduled again once its previous
     * task started allocates nothing, so {@code receive()} hands messages over from the completion loop
     * without garbage. Delayed and periodic tasks wait on Reactor's parallel scheduler, then run here. The
     * threads end with the loops' {@link #dispose()}, after the loops' other threads: tasks scheduled after
     * that are refused.
     */
    reactor.core.scheduler.Scheduler scheduler();
}
