package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.util.FieldHandles;
import rdmaflux.cm.RegisteredBuffer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

import org.reactivestreams.Subscription;
import rdmaflux.verbs.RemoteBuffer;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * One operation of a connection (a send, RDMA READ or WRITE, an atomic) as a {@code Mono} with nothing
 * assembled behind it: each subscription hands the operation to the send queue with one small object that
 * is at once the queue's sink and the subscriber's subscription, and its end reaches the subscriber on the
 * connection's scheduler through the connection's {@link Signals}, in batches. This replaces
 * {@code Mono.create(...).then().publishOn(scheduler)}, three operators and a scheduler task per message.
 *
 * <p>Threads: subscribed on any thread; the sink is told on the completion loop, under the send queue's lock
 * (it records and hands over, nothing else); the subscriber is signalled on the scheduler.
 *
 * @param <T> {@code Void}, or {@code Long} for atomics
 */
public final class Operation<T> extends Mono<T> {
    private final SendQueue queue;
    private final Signals signals;
    private final OpKind kind;
    private final ByteBuffer data;
    private final RegisteredBuffer local;
    private final RemoteBuffer remote;
    private final long a;
    private final long b;

    /** See {@link SendQueue#enqueue(OpKind, ByteBuffer, RegisteredBuffer, RemoteBuffer, long, long, Object, MonoSink)}. */
    public Operation(SendQueue queue, Signals signals, OpKind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote,
              long a, long b) {
        this.queue = queue;
        this.signals = signals;
        this.kind = kind;
        this.data = data;
        this.local = local;
        this.remote = remote;
        this.a = a;
        this.b = b;
    }

    @Override
    public void subscribe(CoreSubscriber<? super T> actual) {
        Sink<T> sink = new Sink<>(actual, signals);
        actual.onSubscribe(sink);
        queue.enqueue(kind, data, local, remote, a, b, null, sink);
    }

    /**
     * One subscription: records the operation's end and queues itself on {@link Signals} once the subscriber
     * may be told (a value needs its request; completion and errors need none). Its state is one atomic int.
     *
     * @param <T> the value type
     */
    static final class Sink<T> implements QueueSink, Subscription {
        private static final VarHandle FLAGS = FieldHandles.of(MethodHandles.lookup(), Sink.class, "flags",
                int.class);

        private static final int REQUESTED = 1;
        private static final int ENDED = 2;
        private static final int QUEUED = 4;
        private static final int CANCELLED = 8;

        private final CoreSubscriber<? super T> actual;
        private final Signals signals;
        private volatile int flags;
        /** Written before {@link #ENDED} is set, read after it is seen. */
        private Object value;
        private Throwable error;
        /** Withdraws the operation while it is still queued; set under the send queue's lock. */
        private volatile Disposable withdraw;
        /** The next sink in {@link Signals}' batch. */
        Sink<?> next;

        Sink(CoreSubscriber<? super T> actual, Signals signals) {
            this.actual = actual;
            this.signals = signals;
        }

        @Override
        public void success() {
            end(null, null);
        }

        @Override
        public void success(Object v) {
            end(v, null);
        }

        @Override
        public void error(Throwable e) {
            end(null, e);
        }

        private void end(Object v, Throwable e) {
            int s = flags;
            if ((s & ENDED) != 0) {
                return;
            }
            value = v;
            error = e;
            withdraw = null;
            while (!FLAGS.compareAndSet(this, s, s | ENDED)) {
                s = flags;
            }
            queueIfReady();
        }

        @Override
        public void request(long n) {
            if (Operators.validate(n)) {
                int s;
                do {
                    s = flags;
                } while ((s & REQUESTED) == 0 && !FLAGS.compareAndSet(this, s, s | REQUESTED));
                queueIfReady();
            }
        }

        /** Hands this to {@link Signals} once, when it ended and the subscriber may be told. */
        private void queueIfReady() {
            while (true) {
                int s = flags;
                if ((s & (QUEUED | CANCELLED)) != 0 || (s & ENDED) == 0) {
                    return;
                }
                if (value != null && error == null && (s & REQUESTED) == 0) {
                    return; // a value waits for its request
                }
                if (FLAGS.compareAndSet(this, s, s | QUEUED)) {
                    signals.add(this);
                    return;
                }
            }
        }

        /** On the scheduler: tells the subscriber. */
        @SuppressWarnings("unchecked")
        void signal() {
            if ((flags & CANCELLED) != 0) {
                return;
            }
            if (error != null) {
                actual.onError(error);
            } else {
                if (value != null) {
                    actual.onNext((T) value);
                }
                actual.onComplete();
            }
        }

        @Override
        public void cancel() {
            int s = (int) FLAGS.getAndBitwiseOr(this, CANCELLED);
            if ((s & (ENDED | CANCELLED)) == 0) {
                Disposable w = withdraw;
                if (w != null) {
                    w.dispose(); // still queued: never posted, its buffer never read after this
                }
            }
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }

        @Override
        public MonoSink<Object> onCancel(Disposable d) {
            withdraw = d;
            if ((flags & CANCELLED) != 0) {
                d.dispose(); // cancelled while it was being queued
            }
            return this;
        }
    }
}
