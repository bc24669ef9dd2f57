package rdmaflux.cm.internal.rc;

import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaMessageFlux;

/**
 * A connection's {@code receive()}: its messages as they are, or {@linkplain #autoRelease() released after
 * each onNext}.
 *
 * <p>An auto-released message is always an object of its own delivery (a recycled receive slot is
 * {@linkplain ReceiveSlot#lend() lent} first): the release after {@code onNext} must free exactly the delivery
 * it handed out, never a newer message that the slot took meanwhile (the subscriber may have released it
 * itself, and the buffer may have been refilled by then), and a message used after it must fail loudly.
 *
 * <p>Threads: as any {@link Flux}; the auto-release happens on the thread of the {@code onNext}.
 */
public final class ReceivedMessages extends RdmaMessageFlux {

    /**
     * Wraps a connection's messages, each one {@linkplain TrackedMessage tracked} if the leak detector samples
     * it as it reaches the subscriber: a message queued in the connection (for a subscriber that never came,
     * or one that left) is the connection's to release, never the application's leak.
     *
     * @param source the connection's messages, released when discarded upstream
     * @param connection the connection's addresses, for a leak report
     */
    public ReceivedMessages(Flux<RdmaMessage> source, String connection) {
        super(source.map(m -> TrackedMessage.maybeTrack(m, connection)));
    }

    @Override
    public void subscribe(CoreSubscriber<? super RdmaMessage> actual) {
        source.subscribe(new Detaching(actual));
    }

    @Override
    public Flux<RdmaMessage> autoRelease() {
        return new AutoRelease(this);
    }

    /**
     * The subscriber as the connection holds it, let go of once the subscription ends. Reactor's unicast sink
     * keeps its subscriber for as long as the connection's inbound side lives, and that side lives on while
     * a message it delivered is unreleased (the leak detector holds the delivery, to give its buffer back).
     * Without the cut, whatever the application's subscriber reaches (a queue of messages it never released,
     * say) would stay reachable for good, and those leaks never reported.
     */
    private static final class Detaching implements CoreSubscriber<RdmaMessage>, Subscription, Scannable {
        private final Context context;
        private volatile CoreSubscriber<? super RdmaMessage> actual;
        private Subscription upstream;

        Detaching(CoreSubscriber<? super RdmaMessage> actual) {
            this.actual = actual;
            this.context = actual.currentContext();
        }

        @Override
        public Context currentContext() {
            return context;
        }

        @Override
        public void onSubscribe(Subscription s) {
            CoreSubscriber<? super RdmaMessage> a = actual;
            if (Operators.validate(upstream, s) && a != null) {
                upstream = s;
                a.onSubscribe(this);
            }
        }

        @Override
        public void onNext(RdmaMessage m) {
            CoreSubscriber<? super RdmaMessage> a = actual;
            if (a == null) {
                m.release(); // arrived after the cancel: nobody takes it
                return;
            }
            a.onNext(m);
        }

        @Override
        public void onError(Throwable t) {
            CoreSubscriber<? super RdmaMessage> a = actual;
            actual = null;
            if (a != null) {
                a.onError(t);
            }
        }

        @Override
        public void onComplete() {
            CoreSubscriber<? super RdmaMessage> a = actual;
            actual = null;
            if (a != null) {
                a.onComplete();
            }
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            actual = null;
            upstream.cancel();
        }

        @Override
        public Object scanUnsafe(Attr key) {
            return passThrough(key, upstream, actual);
        }
    }

    /** The operator: each message released once the downstream {@code onNext} returned, unless retained. */
    private static final class AutoRelease extends FluxOperator<RdmaMessage, RdmaMessage> {
        AutoRelease(Flux<RdmaMessage> source) {
            super(source);
        }

        @Override
        public void subscribe(CoreSubscriber<? super RdmaMessage> actual) {
            source.subscribe(new Releasing(actual));
        }
    }

    /** One subscription of {@link AutoRelease}; passes everything through, releasing after each onNext. */
    private static final class Releasing implements CoreSubscriber<RdmaMessage>, Subscription, Scannable {
        private final CoreSubscriber<? super RdmaMessage> actual;
        private Subscription upstream;

        Releasing(CoreSubscriber<? super RdmaMessage> actual) {
            this.actual = actual;
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }

        @Override
        public void onSubscribe(Subscription s) {
            if (Operators.validate(upstream, s)) {
                upstream = s;
                actual.onSubscribe(this);
            }
        }

        @Override
        public void onNext(RdmaMessage m) {
            RdmaMessage delivery = m instanceof ReceiveSlot slot ? slot.lend() : m;
            try {
                actual.onNext(delivery);
            } finally {
                if (!(delivery instanceof Retainable r && r.retained())) {
                    delivery.release();
                }
            }
        }

        @Override
        public void onError(Throwable t) {
            actual.onError(t);
        }

        @Override
        public void onComplete() {
            actual.onComplete();
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            upstream.cancel();
        }

        @Override
        public Object scanUnsafe(Attr key) {
            return passThrough(key, upstream, actual);
        }
    }

    /** What a pass-through subscriber of this class tells Reactor's tools about itself. */
    private static Object passThrough(Scannable.Attr key, Subscription upstream, Object actual) {
        if (key == Scannable.Attr.PARENT) {
            return upstream;
        }
        if (key == Scannable.Attr.ACTUAL) {
            return actual;
        }
        if (key == Scannable.Attr.RUN_STYLE) {
            return Scannable.Attr.RunStyle.SYNC;
        }
        return null;
    }
}
