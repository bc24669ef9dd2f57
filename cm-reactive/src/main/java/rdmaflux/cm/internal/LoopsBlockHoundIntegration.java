package rdmaflux.cm.internal;

import java.util.List;

import rdmaflux.cm.internal.loop.EventLoop;
import rdmaflux.cm.internal.loop.LoopThread;
import rdmaflux.cm.internal.loop.SignalThread;
import rdmaflux.cm.internal.rc.ConnectionLock;
import rdmaflux.cm.internal.rc.SendBatches;
import rdmaflux.verbs.NativeResource;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * What BlockHound needs to know about rdmaflux's loops. BlockHound finds it through {@link java.util.ServiceLoader}
 * ({@code META-INF/services} on the class path, the module's {@code provides} on the module path) when the
 * application installs BlockHound ({@code BlockHound.install()}); BlockHound is an optional dependency, and
 * without it this class is never loaded.
 *
 * <p>It marks the loops' threads ({@link LoopThread}: the CM loops, the completion loops, the signal
 * threads) non-blocking, so that a blocking call there is reported, and allows exactly the waits that are the
 * loops' own and bounded, each in a method of its own ({@link #WAITS}):
 * <ul>
 *   <li>a spinning completion loop's pause ({@link Thread#onSpinWait()}, which BlockHound counts as blocking);
 *   <li>a signal thread's sleep between tasks (a park) and its moment's wait for a producer;
 *   <li>the wait for a connection's lock ({@link ConnectionLock#lock()}: short holds) and for the send post in
 *       progress on the connection (one {@code ibv_post_send});
 *   <li>the verbs layer's waits for the post or poll in progress on the same queue, and for the calls in
 *       progress on an object being closed.
 * </ul>
 * A loop's wait in {@code poll(2)} ({@link rdmaflux.verbs.Poller}) needs no allowance: it is an FFM downcall,
 * which BlockHound does not see (it wraps the JDK's native methods, and a downcall is none of them).
 *
 * <p>Threads: BlockHound calls {@link #applyTo} once, on the thread that installs it.
 */
public final class LoopsBlockHoundIntegration implements BlockHoundIntegration {

    /**
     * A method inside which blocking calls are allowed.
     *
     * @param className the class that declares it
     * @param method its name
     */
    record Wait(String className, String method) {
    }

    /** The loops' own waits; the methods are private, so they are named here. */
    static final List<Wait> WAITS = List.of(
            new Wait(EventLoop.class.getName(), "spinWait"),
            new Wait(SignalThread.class.getName(), "idle"),
            new Wait(SignalThread.class.getName(), "waitForProducer"),
            new Wait(ConnectionLock.class.getName(), "lock"),
            new Wait(SendBatches.class.getName(), "awaitPost"),
            new Wait("rdmaflux.verbs.QueueLock", "contended"),
            new Wait(NativeResource.class.getName(), "awaitLeases"));

    /** Made by {@link java.util.ServiceLoader}. */
    public LoopsBlockHoundIntegration() {
    }

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.nonBlockingThreadPredicate(current -> current.or(LoopThread.class::isInstance));
        for (Wait w : WAITS) {
            builder.allowBlockingCallsInside(w.className(), w.method());
        }
    }
}
