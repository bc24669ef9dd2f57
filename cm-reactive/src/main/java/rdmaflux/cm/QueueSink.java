package rdmaflux.cm;

import reactor.core.publisher.MonoSink;

/**
 * A sink made for a {@link SendQueue} rather than by {@code Mono.create}: the queue never registers demand
 * or disposal callbacks, only {@link MonoSink#onCancel} to withdraw a queued request. Told on the thread
 * that completes the request, under the connection's lock: it must only record and hand over.
 */
interface QueueSink extends MonoSink<Object> {
    @Override
    default MonoSink<Object> onRequest(java.util.function.LongConsumer consumer) {
        return this;
    }

    @Override
    default MonoSink<Object> onDispose(reactor.core.Disposable d) {
        return this;
    }

    /**
     * A sink that wants to know when its request was withdrawn (a cancelled {@code Mono}'s sink is not told:
     * nobody listens any more). Told under the connection's lock: it must only record and hand over.
     */
    interface Withdrawable {
        /** The request was taken off the queue before it was posted: no completion will come. */
        void withdrawn();
    }
}
