package rdmaflux.cm;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.LongConsumer;

import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * {@link RdmaConnection#send(Publisher)}: a stream of messages with at most {@code window} in flight, each
 * handed to the send queue with a small sink of its own rather than a {@code Mono} (no operator assembly,
 * no scheduler hop per message). Completions only count; more is requested from the source on the
 * connection's scheduler, once per batch of completions, so the source never runs on a completion loop.
 *
 * <p>Threads: the source's {@code onNext} on its own threads, completions on the completion loop (under the
 * send queue's lock: they record and hand over, nothing else), requests and the terminal signal on the
 * scheduler. All shared state is atomic; no lock of this class is held while the send queue's is taken.
 */
final class StreamSend extends Mono<Void> {
    private final Connection connection;
    private final Publisher<? extends ByteBuffer> source;
    private final int window;
    private final Scheduler scheduler;

    StreamSend(Connection connection, Publisher<? extends ByteBuffer> source, int window, Scheduler scheduler) {
        this.connection = connection;
        this.source = source;
        this.window = Math.max(1, window);
        this.scheduler = scheduler;
    }

    @Override
    public void subscribe(CoreSubscriber<? super Void> actual) {
        source.subscribe(new Sender(actual, connection, window, scheduler));
    }

    /** One subscription: the source's subscriber and the caller's subscription. */
    private static final class Sender implements CoreSubscriber<ByteBuffer>, Subscription, Runnable {
        private final CoreSubscriber<? super Void> actual;
        private final Connection connection;
        private final Scheduler scheduler;
        /** The messages handed over and not finished, by slot: a cancel withdraws the queued ones. */
        private final AtomicReferenceArray<Element> live;
        private final AtomicInteger inFlight = new AtomicInteger();
        /** Completions not yet turned into a request to the source. */
        private final AtomicInteger toRequest = new AtomicInteger();
        private final AtomicBoolean requestScheduled = new AtomicBoolean();
        private final AtomicBoolean terminated = new AtomicBoolean();
        private volatile boolean sourceDone;
        private Subscription upstream;

        Sender(CoreSubscriber<? super Void> actual, Connection connection, int window, Scheduler scheduler) {
            this.actual = actual;
            this.connection = connection;
            this.scheduler = scheduler;
            this.live = new AtomicReferenceArray<>(window);
        }

        @Override
        public void onSubscribe(Subscription s) {
            if (Operators.validate(upstream, s)) {
                upstream = s;
                actual.onSubscribe(this);
                s.request(live.length());
            }
        }

        @Override
        public void onNext(ByteBuffer message) {
            if (terminated.get()) {
                return; // the stream ended; what the source still emits is not sent
            }
            inFlight.incrementAndGet();
            Element e = new Element(this);
            e.slot = take(e);
            connection.sendElement(message, e);
        }

        /** A free slot for {@code e}: at most {@code window} are in flight, as that much is requested. */
        private int take(Element e) {
            int n = live.length();
            for (int i = 0; i < n; i++) {
                if (live.get(i) == null && live.compareAndSet(i, null, e)) {
                    return i;
                }
            }
            return -1; // a source emitting beyond its demand: sent, not withdrawable
        }

        @Override
        public void onError(Throwable t) {
            sourceDone = true;
            end(t);
        }

        @Override
        public void onComplete() {
            sourceDone = true;
            if (inFlight.get() == 0) {
                end(null);
            }
        }

        /** Completion loop (or the caller's thread when refused at once): one message finished. */
        void finished(Element e, Throwable error) {
            if (e.slot >= 0) {
                live.compareAndSet(e.slot, e, null);
            }
            int left = inFlight.decrementAndGet();
            if (error != null) {
                end(error);
            } else if (sourceDone && left == 0) {
                end(null);
            } else {
                toRequest.incrementAndGet();
                if (requestScheduled.compareAndSet(false, true)) {
                    schedule(this);
                }
            }
        }

        /** On the scheduler: asks the source for as many messages as finished since the last time. */
        @Override
        public void run() {
            requestScheduled.set(false);
            int n = toRequest.getAndSet(0);
            if (n > 0 && !terminated.get()) {
                upstream.request(n);
            }
        }

        /**
         * Ends the stream once: the first failure, or completion. A failure may be told under the send
         * queue's lock, in the middle of its own bookkeeping: withdrawing the other queued messages and
         * cancelling the source (user code) wait for the scheduler.
         */
        private void end(Throwable error) {
            if (!terminated.compareAndSet(false, true)) {
                return;
            }
            schedule(() -> {
                if (error != null) {
                    upstream.cancel();
                    withdrawQueued();
                    actual.onError(error);
                } else {
                    actual.onComplete();
                }
            });
        }

        private void withdrawQueued() {
            for (int i = 0; i < live.length(); i++) {
                Element e = live.getAndSet(i, null);
                if (e != null) {
                    e.withdraw();
                }
            }
        }

        private void schedule(Runnable task) {
            try {
                scheduler.schedule(task);
            } catch (RejectedExecutionException e) {
                task.run(); // the scheduler is gone: signal here rather than never
            }
        }

        @Override
        public void request(long n) {
            // Mono<Void>: there is nothing to request.
        }

        @Override
        public void cancel() {
            if (terminated.compareAndSet(false, true)) {
                upstream.cancel();
                withdrawQueued(); // posted ones complete or fail with the connection
            }
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }
    }

    /**
     * One message's sink: counts its end; withdraws it while it is still queued. It is its own "ended" flag
     * (one object per message, not two).
     */
    @SuppressWarnings("serial") // never serialized
    private static final class Element extends AtomicBoolean implements MonoSink<Object> {
        private final Sender sender;
        int slot = -1;
        /** Set under the send queue's lock when the message is queued; null once it ended. */
        private volatile Disposable withdraw;

        Element(Sender sender) {
            this.sender = sender;
        }

        void withdraw() {
            Disposable w = withdraw;
            if (w != null) {
                w.dispose();
            }
        }

        private void end(Throwable error) {
            if (compareAndSet(false, true)) {
                withdraw = null;
                sender.finished(this, error);
            }
        }

        @Override
        public void success() {
            end(null);
        }

        @Override
        public void success(Object value) {
            end(null);
        }

        @Override
        public void error(Throwable e) {
            end(e);
        }

        @Override
        public Context currentContext() {
            return sender.currentContext();
        }

        @Override
        public MonoSink<Object> onRequest(LongConsumer consumer) {
            return this;
        }

        @Override
        public MonoSink<Object> onCancel(Disposable d) {
            withdraw = d;
            return this;
        }

        @Override
        public MonoSink<Object> onDispose(Disposable d) {
            return this;
        }
    }
}
