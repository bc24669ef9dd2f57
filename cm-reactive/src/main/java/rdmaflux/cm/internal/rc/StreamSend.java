package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.util.StreamWindow;
import rdmaflux.cm.MessageWriter;
import rdmaflux.cm.RdmaConnection;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.Function;

import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * {@link RdmaConnection#send(Publisher)} and {@link RdmaConnection#send(Publisher, Function, Consumer)}: a
 * stream of messages with at most {@code window} in flight, each handed to the send queue with a sink of its
 * own rather than a {@code Mono} (no operator assembly, no scheduler hop per message). The sinks are made
 * once per subscription, one per place in the window, and reused; a message that must wait for a credit or
 * buffer waits as its sink. Completions only count; more is requested from the source on the connection's
 * scheduler once half the window has finished (or nothing is in flight), so the source never runs on a
 * completion loop and the scheduler is called once per half window, not per message (the window's accounting
 * is a {@link StreamWindow}, as a UD queue's stream of datagrams has one). With a
 * {@code release} callback, the messages whose send ended are handed back in the same batch, on the
 * scheduler.
 *
 * <p>A source that offers Reactor's fusion is drained in runs: {@link Fuseable#SYNC} ({@code Flux.range},
 * {@code fromIterable}, {@code fromArray} and their {@code map}s: polling makes the messages) or
 * {@link Fuseable#ASYNC} (a queue the sender polls, as a unicast sink). The messages the window allows are
 * taken together and handed to the send queue under one hold of the connection's lock, so they leave with
 * one doorbell and one signaled completion ({@link SendBatches}) instead of one each. The window and the
 * requests-per-half-window above are the same; only who takes the messages differs.
 *
 * <p>Threads: the source's {@code onNext} on its own threads, completions on the completion loop (under the
 * send queue's lock: they record and hand over, nothing else), requests, releases and the terminal signal on
 * the scheduler. All shared state is atomic (the window's too); no lock of this class is held while the send
 * queue's is taken.
 *
 * @param <T> the source's message type
 */
public final class StreamSend<T> extends Mono<Void> {

    private final StreamTarget connection;
    private final Publisher<? extends T> source;
    private final Function<? super T, ? extends ByteBuffer> content;
    private final MessageWriter<? super T> writer;
    private final Consumer<? super T> release;
    private final int window;
    private final Scheduler scheduler;

    /**
     * @param content a message's bytes
     * @param release told each message once the connection no longer reads its memory; null: nobody is told
     */
    public StreamSend(StreamTarget connection, Publisher<? extends T> source, Function<? super T, ? extends ByteBuffer> content,
               Consumer<? super T> release, int window, Scheduler scheduler) {
        this(connection, source, content, null, release, window, scheduler);
    }

    /**
     * {@link RdmaConnection#send(Publisher, MessageWriter, Consumer)}.
     *
     * @param writer a message's length and bytes, written into its send buffer
     * @param release told each message once the connection no longer reads it
     */
    public StreamSend(StreamTarget connection, Publisher<? extends T> source, MessageWriter<? super T> writer,
               Consumer<? super T> release, int window, Scheduler scheduler) {
        this(connection, source, null, writer, release, window, scheduler);
    }

    private StreamSend(StreamTarget connection, Publisher<? extends T> source,
                       Function<? super T, ? extends ByteBuffer> content, MessageWriter<? super T> writer,
                       Consumer<? super T> release, int window, Scheduler scheduler) {
        this.connection = connection;
        this.source = source;
        this.content = content;
        this.writer = writer;
        this.release = release;
        this.window = Math.max(1, window);
        this.scheduler = scheduler;
    }

    @Override
    public void subscribe(CoreSubscriber<? super Void> actual) {
        source.subscribe(new Sender<>(actual, this));
    }

    /**
     * One subscription: the source's subscriber and the caller's subscription.
     *
     * @param <T> the source's message type
     */
    static final class Sender<T> implements CoreSubscriber<T>, Subscription, Runnable {
        private final CoreSubscriber<? super Void> actual;
        private final StreamTarget connection;
        /** What is in flight, what may be requested, whether the source and the stream ended. */
        private final StreamWindow window;
        private final StreamContent<T> content;
        private final Consumer<? super T> release;
        /**
         * The messages handed over and not finished (or not released yet), by slot: a cancel withdraws the
         * queued ones. A free slot's element can be reused.
         */
        private final AtomicReferenceArray<StreamElement<T>> live;
        /** The element of each slot, made on the slot's first use. Only the source's thread touches it. */
        private final StreamElement<T>[] elements;
        /** Ended messages not yet given to {@code release}, linked through {@link StreamElement#next}. */
        private final AtomicReference<StreamElement<T>> ended = new AtomicReference<>();
        private Subscription upstream;
        /** The fused source's queue, or null when the source pushes its messages. */
        private Fuseable.QueueSubscription<T> fusedQueue;
        /**
         * Whether the fused source is synchronous (Reactor's {@link Fuseable#SYNC}: {@code Flux.range},
         * {@code fromIterable}, their {@code map}s): polling makes its messages, and a null poll is its end.
         */
        private boolean syncFused;
        /** Serializes the draining of a fused source. */
        private final AtomicInteger drainWip = new AtomicInteger();
        /**
         * A fused source: messages that may still be taken (its "demand", taken from the window's credit); only
         * the draining thread.
         */
        private long credit;
        /** How many messages were handed over: each element's place in the stream's order; the source's thread. */
        private long handedOver;
        /** A fused source: a run's messages and their bytes (or lengths), between polling and handing over. */
        private final Object[] runMessages;
        private final ByteBuffer[] runBytes;
        private final int[] runLengths;

        Sender(CoreSubscriber<? super Void> actual, StreamSend<T> send) {
            this.actual = actual;
            this.connection = send.connection;
            this.window = new StreamWindow(send.window, send.scheduler, this);
            this.content = new StreamContent<>(send.content, send.writer, send.connection);
            this.release = send.release;
            this.live = new AtomicReferenceArray<>(send.window);
            @SuppressWarnings("unchecked")
            StreamElement<T>[] made = new StreamElement[send.window];
            this.elements = made;
            int run = Math.min(send.window, SendBatches.MAX_BATCH);
            this.runMessages = new Object[run];
            this.runBytes = new ByteBuffer[run];
            this.runLengths = new int[run];
        }

        @Override
        public void onSubscribe(Subscription s) {
            if (Operators.validate(upstream, s)) {
                upstream = s;
                int mode = s instanceof Fuseable.QueueSubscription<?> q ? q.requestFusion(Fuseable.ANY) : Fuseable.NONE;
                if (mode != Fuseable.NONE) {
                    @SuppressWarnings("unchecked")
                    Fuseable.QueueSubscription<T> fq = (Fuseable.QueueSubscription<T>) s;
                    fusedQueue = fq;
                    syncFused = mode == Fuseable.SYNC;
                    window.grant(live.length()); // the first credit, taken by the drain
                    actual.onSubscribe(this);
                    drainFused();
                    return;
                }
                actual.onSubscribe(this);
                s.request(live.length());
            }
        }

        @Override
        public void onNext(T message) {
            if (fusedQueue != null) {
                drainFused(); // a fused source only says there is something to poll
                return;
            }
            if (window.ended()) {
                releaseNow(message); // the stream ended; what the source still emits is not sent
                return;
            }
            ByteBuffer bytes;
            try {
                bytes = content.bytes(message);
            } catch (RuntimeException | Error x) {
                releaseNow(message);
                upstream.cancel();
                end(x);
                return;
            }
            window.take();
            connection.sendElement(bytes, take(release == null ? null : message, bytes, message, content.written()));
        }

        /** {@return whether the stream ended: failed, cancelled or completed} Any thread. */
        boolean ended() {
            return window.ended();
        }

        /** Under the send queue's lock, as the element of {@code message} is posted: see {@link QueueSink.Written}. */
        void write(T message, ByteBuffer target) {
            content.write(message, target);
        }

        /** The source's thread: a message that never reached the send queue goes back at once. */
        private void releaseNow(T message) {
            if (release != null) {
                release.accept(message);
            }
        }

        /**
         * The source's thread: the element of a free slot, which holds it from now on. At most {@code window}
         * are in flight (or unreleased), as that much is requested; only this thread fills slots.
         */
        private StreamElement<T> take(T message, ByteBuffer bytes, T toWrite, int length) {
            int n = live.length();
            for (int i = 0; i < n; i++) {
                if (live.get(i) == null) {
                    StreamElement<T> e = elements[i];
                    if (e == null) {
                        e = new StreamElement<>(this, i);
                        elements[i] = e;
                    }
                    e.use(message, bytes, toWrite, length, ++handedOver);
                    live.set(i, e);
                    return e;
                }
            }
            StreamElement<T> e = new StreamElement<>(this, -1); // a source emitting beyond its demand: sent, not withdrawable
            e.use(message, bytes, toWrite, length, ++handedOver);
            return e;
        }

        /**
         * A fused source, on whichever thread signals it or the scheduler after completions (serialized):
         * takes as many messages as the credit allows, in runs of up to {@link SendBatches#MAX_BATCH}, each
         * run handed to the send queue under one hold of the connection's lock. The content function (user
         * code) runs before the lock is taken.
         */
        private void drainFused() {
            if (drainWip.getAndIncrement() != 0) {
                return;
            }
            Fuseable.QueueSubscription<T> q = fusedQueue;
            int missed = 1;
            do {
                credit += window.takeCredit();
                for (;;) {
                    if (window.ended()) {
                        releaseQueued(q); // what the source still holds is not sent
                        break;
                    }
                    int n = 0;
                    try {
                        T m;
                        while (n < runMessages.length && credit > 0 && !(syncFused && window.isSourceDone())) {
                            m = q.poll();
                            if (m == null) {
                                if (syncFused) {
                                    window.sourceDone(); // a synchronous source's null poll is its end
                                }
                                break;
                            }
                            runMessages[n++] = m;
                            credit--;
                            window.take(); // counted at once: the stream cannot end under it
                            runBytes[n - 1] = content.bytes(m);
                            runLengths[n - 1] = content.written();
                        }
                    } catch (RuntimeException | Error x) {
                        for (int i = 0; i < n; i++) {
                            releaseNow(message(i));
                        }
                        window.untake(n);
                        clearRun(n);
                        q.cancel();
                        end(x);
                        continue; // releases what is left
                    }
                    if (n == 0) {
                        if (window.isSourceDone() && window.outstanding() == 0 && fusedEmpty()) {
                            end(null);
                        }
                        break;
                    }
                    sendRun(n);
                }
                missed = drainWip.addAndGet(-missed);
            } while (missed != 0);
        }

        /** {@return whether the fused source holds nothing more: a synchronous one once it ended} */
        private boolean fusedEmpty() {
            return syncFused ? window.isSourceDone() : fusedQueue.isEmpty();
        }

        /**
         * The draining thread, after the end: hands what the fused source still queues to {@code release}.
         * A synchronous source holds nothing (it makes its messages as they are polled): it is only cleared.
         */
        private void releaseQueued(Fuseable.QueueSubscription<T> q) {
            if (syncFused) {
                q.clear();
                return;
            }
            try {
                T m;
                while ((m = q.poll()) != null) {
                    releaseNow(m);
                }
            } catch (RuntimeException e) {
                q.clear(); // a source failing to poll now: it drops the rest itself
            }
        }

        @SuppressWarnings("unchecked")
        private T message(int i) {
            return (T) runMessages[i];
        }

        private void clearRun(int n) {
            java.util.Arrays.fill(runMessages, 0, n, null);
            java.util.Arrays.fill(runBytes, 0, n, null);
        }

        /** The draining thread: hands {@code n} polled messages over under one hold of the lock. */
        private void sendRun(int n) {
            ConnectionLock lock = connection.sendLock();
            if (lock != null) {
                lock.lock(); // reentrant: each message's enqueue takes it again; the outermost unlock posts them all
            }
            try {
                for (int i = 0; i < n; i++) {
                    T m = message(i);
                    connection.sendElement(runBytes[i], take(release == null ? null : m, runBytes[i], m,
                            runLengths[i]));
                }
            } finally {
                clearRun(n);
                if (lock != null) {
                    lock.unlock();
                }
            }
        }

        @Override
        public void onError(Throwable t) {
            // Not marked done first: a completion in between would see a done source with nothing in flight
            // and end the stream as completed, losing the failure.
            end(t);
        }

        @Override
        public void onComplete() {
            window.sourceDone();
            if (fusedQueue != null) {
                drainFused(); // ends once what the queue still holds was sent
            } else if (window.outstanding() == 0) {
                end(null);
            }
        }

        /**
         * Completion loop (or the caller's thread when refused at once, or the thread withdrawing it): one
         * message finished.
         */
        void finished(StreamElement<T> e, Throwable error) {
            // The element is reused once its slot is free: it is not touched after that.
            if (e.message != null) {
                StreamElement<T> head;
                do {
                    head = ended.get();
                    e.next = head;
                } while (!ended.compareAndSet(head, e)); // its slot is freed once it is released
            } else if (e.slot >= 0) {
                live.compareAndSet(e.slot, e, null);
            }
            if (error != null) {
                // Before the count drops: a source completing in between would see nothing in flight and end
                // the stream as completed, losing the failure.
                end(error);
            }
            int left = window.finish();
            int due = 0;
            if (error == null) {
                if (window.isSourceDone() && left == 0 && (fusedQueue == null || fusedEmpty())) {
                    end(null);
                } else {
                    due = window.replace();
                }
            }
            // Releases are due even after the end (the window schedules this task once the stream ended):
            // posted messages finish after a cancel. Otherwise the source still has demand, or messages in
            // flight that will finish, until half the window is due.
            window.finished(due, left);
        }

        /**
         * On the scheduler: hands back the messages that ended, then asks the source for as many messages as
         * finished since the last time.
         */
        @Override
        public void run() {
            window.requestStarted();
            releaseEnded();
            if (fusedQueue != null) {
                drainFused(); // takes the finished count as credit
                return;
            }
            window.requestFrom(upstream);
        }

        private void releaseEnded() {
            for (StreamElement<T> e = ended.getAndSet(null); e != null; ) {
                StreamElement<T> next = e.next;
                T m = e.message;
                e.next = null;
                e.message = null;
                if (e.slot >= 0) {
                    live.compareAndSet(e.slot, e, null);
                }
                release.accept(m);
                e = next;
            }
        }

        /**
         * Ends the stream once: the first failure, or completion. A failure may be told under the send
         * queue's lock, in the middle of its own bookkeeping: withdrawing the other queued messages and
         * cancelling the source (user code) wait for the scheduler.
         */
        private void end(Throwable error) {
            if (!window.end()) {
                return;
            }
            window.schedule(() -> {
                if (error != null) {
                    upstream.cancel();
                    if (fusedQueue != null) {
                        drainFused(); // releases what the source still queues
                    }
                    withdrawQueued();
                    releaseEnded();
                    actual.onError(error);
                } else {
                    releaseEnded();
                    actual.onComplete();
                }
            });
        }

        /**
         * Withdraws what still waits, the last handed over first: withdrawing a message lets the queue post
         * what waited behind it, so the first one first could post a later one and leave a gap; this way
         * what arrives is a prefix of the stream. Only on a cancel or a failure, so the sort allocates. The
         * slots stay taken until their messages end: a message of a run still being handed over must not take
         * the place of one in flight (its message would never be released).
         */
        private void withdrawQueued() {
            java.util.List<StreamElement<T>> queued = new java.util.ArrayList<>();
            for (int i = 0; i < live.length(); i++) {
                StreamElement<T> e = live.get(i);
                if (e != null) {
                    queued.add(e);
                }
            }
            queued.sort(java.util.Comparator.comparingLong((StreamElement<T> e) -> e.order).reversed());
            for (StreamElement<T> e : queued) {
                e.withdraw();
            }
        }

        @Override
        public void request(long n) {
            // Mono<Void>: there is nothing to request.
        }

        @Override
        public void cancel() {
            if (window.end()) {
                upstream.cancel();
                if (fusedQueue != null) {
                    drainFused(); // releases what the source still queues
                }
                withdrawQueued(); // posted ones complete or fail with the connection
            }
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }
    }

}
