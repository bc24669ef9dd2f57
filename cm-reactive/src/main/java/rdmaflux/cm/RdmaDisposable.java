package rdmaflux.cm;

import java.time.Duration;

import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * What every rdmaflux handle that owns native resources shares (connections, servers, datagram
 * endpoints, multicast memberships and senders), in the style of Reactor Netty's
 * {@code DisposableChannel}: {@link #dispose()} starts an asynchronous close and returns at once,
 * {@link #onDispose()} completes when every native resource is freed, and {@link #disposeNow(Duration)}
 * does both and waits.
 */
public interface RdmaDisposable extends Disposable {

    /** {@return completes when the handle is closed and its native resources are freed} */
    Mono<Void> onDispose();

    /**
     * Disposes and waits until everything is freed. Blocks: never call it on a Reactor non-blocking
     * thread (Reactor refuses) or on rdmaflux's own loops.
     *
     * @param timeout the longest wait
     * @throws IllegalStateException when the close takes longer than {@code timeout}
     */
    default void disposeNow(Duration timeout) {
        dispose();
        onDispose().block(timeout);
    }
}
