package rdmaflux.cm.internal.loop;

import reactor.core.scheduler.NonBlocking;

/**
 * A thread of an {@code RdmaLoops}: a CM loop's, a completion loop's or a signal thread. A Reactor
 * {@link NonBlocking} thread, as Reactor Netty's event loop threads are: {@code block()},
 * {@code blockFirst()} and {@code blockLast()} throw there at once ("... are blocking, which is not
 * supported in thread ..."). Without the mark, a {@code block()} in an operator that runs on a loop (a
 * {@code Schedulers.immediate()} scheduler) waited for a signal that only this same thread could deliver,
 * and hung the loop with every connection on it.
 *
 * <p>The one type that marks rdmaflux's loops, so that tools can tell them apart: BlockHound's integration
 * ({@code rdmaflux.cm.internal.LoopsBlockHoundIntegration}) polices exactly these threads.
 *
 * <p>Threads: made by the loop that owns it, which starts it; it runs that loop until the loop ends.
 */
public class LoopThread extends Thread implements NonBlocking {

    /**
     * A daemon thread, not started: a loop must not keep the JVM alive.
     *
     * @param name the thread's name
     * @param body what it runs, or {@code null} for a subclass that overrides {@link #run()}
     */
    LoopThread(String name, Runnable body) {
        super(body, name);
        setDaemon(true);
    }
}
