package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrowsExactly;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;

import org.junit.jupiter.api.Test;
import rdmaflux.cm.MessageWriter;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * {@link StreamSend} against a recording connection and a scheduler the test runs by hand, one thread: what
 * the source is asked for and when, which messages are handed over under one hold of the lock, releases, and
 * how failures and cancels end the stream. (StreamSendIT covers the same over a real connection.)
 */
class StreamSendTest {

    /** A scheduler whose tasks wait until the test runs them. */
    private static final class ByHand implements Scheduler {
        final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>(); // the race test schedules from two threads
        boolean rejecting;

        @Override
        public Disposable schedule(Runnable task) {
            if (rejecting) {
                throw new RejectedExecutionException("disposed");
            }
            tasks.add(task);
            return () -> tasks.remove(task);
        }

        @Override
        public Worker createWorker() {
            throw new UnsupportedOperationException();
        }

        int runAll() {
            int n = 0;
            Runnable t;
            while ((t = tasks.poll()) != null) {
                t.run();
                n++;
            }
            return n;
        }
    }

    /**
     * The connection: records each element with the lock's hold count and which hold it came in (counted by
     * the lock's outermost unlocks); queued elements can be withdrawn.
     */
    private static class Target implements StreamTarget {
        record Sent(ByteBuffer bytes, MonoSink<Object> sink, int holds, int hold) {
        }

        final ConnectionLock lock = new ConnectionLock();
        int unlocks;

        Target() {
            lock.deferred(new ConnectionLock.Deferred() {
                @Override
                public boolean pending() {
                    return false;
                }

                @Override
                public boolean beforeUnlock() {
                    unlocks++;
                    return false;
                }

                @Override
                public void afterUnlock() {
                }
            });
        }

        final List<Sent> sent = new ArrayList<>();
        final List<ByteBuffer> withdrawn = new ArrayList<>();
        /** Whether elements wait as queued requests, which a withdraw takes back. */
        boolean queueing;

        @Override
        public void sendElement(ByteBuffer message, MonoSink<Object> sink) {
            sent.add(new Sent(message, sink, lock.getHoldCount(), unlocks));
            if (queueing) {
                sink.onCancel(() -> {
                    withdrawn.add(message);
                    ((QueueSink.Withdrawable) sink).withdrawn();
                });
            }
        }

        @Override
        public ConnectionLock sendLock() {
            return lock;
        }

        @Override
        public int eagerMessageSize() {
            return EAGER;
        }

        void complete(int i) {
            sent.get(i).sink().success();
        }
    }

    /** A source that only pushes (no fusion): it records the requests and emits when the test says. */
    private static final class Pushing implements Publisher<ByteBuffer>, Subscription {
        final List<Long> requests = new ArrayList<>();
        boolean cancelled;
        Subscriber<? super ByteBuffer> subscriber;

        @Override
        public void subscribe(Subscriber<? super ByteBuffer> s) {
            subscriber = s;
            s.onSubscribe(this);
        }

        @Override
        public void request(long n) {
            requests.add(n);
        }

        @Override
        public void cancel() {
            cancelled = true;
        }

        ByteBuffer emit(int tag) {
            ByteBuffer b = ByteBuffer.allocate(4).putInt(0, tag);
            subscriber.onNext(b);
            return b;
        }
    }

    /** What the subscriber of the send heard. */
    private static final class Outcome {
        final AtomicBoolean completed = new AtomicBoolean();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        Disposable subscription;

        static Outcome of(StreamSend<?> send) {
            Outcome o = new Outcome();
            o.subscription = send.subscribe(null, o.error::set, () -> o.completed.set(true));
            return o;
        }

        boolean ended() {
            return completed.get() || error.get() != null;
        }
    }

    /** The fake connection's largest eager message: a writer's larger messages get a buffer of their own. */
    private static final int EAGER = 16;

    private final ByHand scheduler = new ByHand();
    private final Target target = new Target();

    /** Writes a byte array; {@code wrote} bytes of it, whatever its length says. */
    private static MessageWriter<byte[]> arrays(int wrote) {
        return new MessageWriter<>() {
            @Override
            public int length(byte[] message) {
                return message.length;
            }

            @Override
            public void write(byte[] message, ByteBuffer target) {
                target.put(message, 0, wrote < 0 ? message.length : wrote);
            }
        };
    }

    /** {@return what the element handed over as {@code sent} writes into a send buffer of the eager size} */
    private static ByteBuffer written(Target.Sent sent) {
        QueueSink.Written w = (QueueSink.Written) sent.sink();
        ByteBuffer slot = ByteBuffer.allocate(EAGER).limit(w.length());
        w.writeTo(slot);
        return slot.flip();
    }

    @Test
    void aWritersSmallMessagesAreHandedOverWithoutBytesAndWriteThemselvesWhenPosted() {
        List<byte[]> released = new ArrayList<>();
        byte[] a = {1, 2, 3};
        byte[] b = new byte[EAGER];
        java.util.Arrays.fill(b, (byte) 7);
        Outcome o = Outcome.of(new StreamSend<>(target, Flux.just(a, b), arrays(-1), released::add, 4, scheduler));
        assertEquals(2, target.sent.size());
        assertEquals(1, target.sent.get(0).holds(), "a fused source's run under one hold of the lock");
        for (int i = 0; i < 2; i++) {
            assertNull(target.sent.get(i).bytes(), "no buffer of its own");
        }
        assertEquals(ByteBuffer.wrap(a), written(target.sent.get(0)));
        assertEquals(ByteBuffer.wrap(b), written(target.sent.get(1)));
        target.complete(0);
        target.complete(1);
        scheduler.runAll();
        assertTrue(o.completed.get());
        assertEquals(2, released.size(), "each message handed back once, after its send");
        assertTrue(released.contains(a) && released.contains(b));
    }

    @Test
    void aWritersLargeMessageIsWrittenAtOnceIntoABufferOfItsOwn() {
        Pushing source = new Pushing();
        byte[] large = new byte[EAGER + 1];
        large[EAGER] = 9;
        List<byte[]> released = new ArrayList<>();
        Outcome.of(new StreamSend<>(target, Flux.from(source).map(x -> large), arrays(-1), released::add, 4,
                scheduler));
        source.emit(0);
        assertEquals(ByteBuffer.wrap(large), target.sent.get(0).bytes(), "written at once, on the source's thread");
    }

    @Test
    void aWriterThatWritesLessThanItsLengthFailsTheStream() {
        Pushing source = new Pushing();
        byte[] large = new byte[EAGER + 1];
        List<byte[]> released = new ArrayList<>();
        Outcome o = Outcome.of(new StreamSend<>(target, Flux.from(source).map(x -> large), arrays(EAGER),
                released::add, 4, scheduler));
        source.emit(0);
        scheduler.runAll();
        assertTrue(o.error.get() instanceof IllegalStateException, String.valueOf(o.error.get()));
        assertTrue(o.error.get().getMessage().contains("wrote 16 of the 17 bytes"), o.error.get().getMessage());
        assertTrue(source.cancelled);
        assertEquals(List.of(large), released, "the message that never reached the connection, at once");
        assertTrue(target.sent.isEmpty());
    }

    /** The send queue fails a message whose write threw; what was queued behind it must not be posted after it. */
    @Test
    void aMessageQueuedBehindAFailedWriteRefusesToBeWritten() {
        byte[] a = {1};
        byte[] b = {2};
        MessageWriter<byte[]> failsOnA = new MessageWriter<>() {
            @Override
            public int length(byte[] message) {
                return 1;
            }

            @Override
            public void write(byte[] message, ByteBuffer target) {
                if (message == a) {
                    throw new IllegalStateException("boom");
                }
                target.put(message);
            }
        };
        List<byte[]> released = new ArrayList<>();
        Outcome o = Outcome.of(new StreamSend<>(target, Flux.just(a, b), failsOnA, released::add, 4, scheduler));
        IllegalStateException boom = assertThrowsExactly(IllegalStateException.class, () -> written(target.sent.get(0)));
        target.sent.get(0).sink().error(boom); // as the send queue tells it
        assertThrowsExactly(java.util.concurrent.CancellationException.class, () -> written(target.sent.get(1)));
        target.sent.get(1).sink().error(new java.util.concurrent.CancellationException());
        scheduler.runAll();
        assertSame(boom, o.error.get());
        assertEquals(2, released.size());
    }

    /**
     * A message of a run that fails as it is handed over ends the stream, and the end may run (on the
     * scheduler's thread) before the rest of the run is handed over: the messages still in flight then must
     * keep their places, or a later message of the run takes over one of them and its message is never
     * released.
     */
    @Test
    void aRunWhoseMessageFailsOnHandOverReleasesEveryMessageOnce() {
        List<ByteBuffer> released = new ArrayList<>();
        Target failing = new Target() {
            @Override
            public void sendElement(ByteBuffer message, MonoSink<Object> sink) {
                super.sendElement(message, sink);
                if (message.getInt(0) == 1) {
                    sink.error(new IllegalStateException("refused"));
                    scheduler.runAll(); // the end, as if the scheduler's thread ran it now
                }
            }
        };
        List<ByteBuffer> messages = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            messages.add(ByteBuffer.allocate(4).putInt(0, i));
        }
        Outcome o = Outcome.of(new StreamSend<>(failing, Flux.fromIterable(messages), Function.identity(),
                released::add, 4, scheduler));
        assertEquals(4, failing.sent.size(), "the whole run was handed over");
        for (int i = 0; i < 4; i++) {
            if (i != 1) {
                failing.sent.get(i).sink().success(); // posted ones complete; the others were withdrawn
            }
        }
        scheduler.runAll();
        assertTrue(o.error.get() instanceof IllegalStateException, String.valueOf(o.error.get()));
        assertEquals(4, released.size(), "released: " + released);
        for (ByteBuffer m : messages) {
            assertTrue(released.stream().anyMatch(r -> r == m), "message " + m.getInt(0) + " was not released");
        }
    }

    @Test
    void aNegativeLengthFailsTheStream() {
        Pushing source = new Pushing();
        MessageWriter<ByteBuffer> negative = new MessageWriter<>() {
            @Override
            public int length(ByteBuffer message) {
                return -1;
            }

            @Override
            public void write(ByteBuffer message, ByteBuffer target) {
                throw new AssertionError("not written");
            }
        };
        Outcome o = Outcome.of(new StreamSend<>(target, source, negative, m -> { }, 4, scheduler));
        source.emit(0);
        scheduler.runAll();
        assertTrue(o.error.get() instanceof IllegalArgumentException, String.valueOf(o.error.get()));
        assertTrue(target.sent.isEmpty());
    }

    private <T> StreamSend<T> send(Publisher<T> source, Function<T, ByteBuffer> content, Consumer<T> release,
                                   int window) {
        return new StreamSend<>(target, source, content, release, window, scheduler);
    }

    @Test
    void aPushingSourceIsAskedForTheWindowThenForHalfOfItAsSendsComplete() {
        Pushing source = new Pushing();
        Outcome o = Outcome.of(send(source, Function.identity(), null, 4));
        assertEquals(List.of(4L), source.requests);
        for (int i = 0; i < 4; i++) {
            source.emit(i);
        }
        assertEquals(4, target.sent.size());
        assertEquals(0, target.sent.get(0).holds(), "a pushed message is handed over on its own");
        target.complete(0);
        assertEquals(0, scheduler.tasks.size(), "a quarter of the window: not yet");
        target.complete(1);
        assertEquals(1, scheduler.tasks.size(), "half the window: the request is scheduled");
        assertEquals(List.of(4L), source.requests, "never on the completing thread");
        scheduler.runAll();
        assertEquals(List.of(4L, 2L), source.requests);
        assertFalse(o.ended());
    }

    @Test
    void completionsBeforeTheScheduledRequestRunsJoinIt() {
        Pushing source = new Pushing();
        Outcome.of(send(source, Function.identity(), null, 4));
        for (int i = 0; i < 4; i++) {
            source.emit(i);
        }
        target.complete(0);
        target.complete(1);
        target.complete(2);
        assertEquals(1, scheduler.runAll(), "one request task");
        assertEquals(List.of(4L, 3L), source.requests);
    }

    @Test
    void anIdleWindowAsksAtOnce() {
        Pushing source = new Pushing();
        Outcome.of(send(source, Function.identity(), null, 8));
        source.emit(0);
        target.complete(0);
        scheduler.runAll();
        assertEquals(List.of(8L, 1L), source.requests, "nothing in flight: no waiting for half the window");
    }

    @Test
    void theStreamCompletesOnTheSchedulerOnceTheLastSendEnded() {
        Pushing source = new Pushing();
        Outcome o = Outcome.of(send(source, Function.identity(), null, 4));
        source.emit(0);
        source.emit(1);
        source.subscriber.onComplete();
        assertFalse(o.ended(), "two sends in flight");
        target.complete(0);
        target.complete(1);
        assertFalse(o.ended(), "the end is signalled on the scheduler");
        scheduler.runAll();
        assertTrue(o.completed.get());
        assertEquals(List.of(4L), source.requests, "a completed source is not asked again");
    }

    @Test
    void aSourceThatCompletesWithNothingInFlightEndsAtOnce() {
        Pushing source = new Pushing();
        Outcome o = Outcome.of(send(source, Function.identity(), null, 4));
        source.subscriber.onComplete();
        scheduler.runAll();
        assertTrue(o.completed.get());
    }

    @Test
    void eachMessageIsReleasedOnceOnTheSchedulerAfterItsSend() {
        Pushing source = new Pushing();
        List<ByteBuffer> released = new ArrayList<>();
        Outcome.of(send(source, Function.identity(), released::add, 4));
        ByteBuffer a = source.emit(0);
        ByteBuffer b = source.emit(1);
        target.complete(0);
        assertEquals(List.of(), released, "released on the scheduler");
        target.complete(1);
        scheduler.runAll();
        assertEquals(2, released.size());
        assertTrue(released.contains(a) && released.contains(b));
        ByteBuffer c = source.emit(2);
        target.complete(2);
        scheduler.runAll();
        assertEquals(3, released.size());
        assertSame(c, released.get(2));
    }

    @Test
    void aSlotIsReusedOnlyOnceItsMessageWasReleased() {
        Pushing source = new Pushing();
        List<ByteBuffer> released = new ArrayList<>();
        Outcome.of(send(source, Function.identity(), released::add, 2));
        source.emit(0);
        source.emit(1);
        target.complete(0);
        target.complete(1);
        // The source emits beyond its demand before the release ran: the window's slots are still held, so
        // the message gets an element of its own.
        source.emit(2);
        assertEquals(3, target.sent.size());
        assertTrue(target.sent.get(2).sink() != target.sent.get(0).sink()
                && target.sent.get(2).sink() != target.sent.get(1).sink());
        scheduler.runAll();
        assertEquals(2, released.size());
        source.emit(3);
        assertTrue(target.sent.get(3).sink() == target.sent.get(0).sink()
                || target.sent.get(3).sink() == target.sent.get(1).sink(), "released slots are reused");
    }

    @Test
    void aFailedSendFailsTheStreamCancelsTheSourceAndWithdrawsTheQueuedOnes() {
        Pushing source = new Pushing();
        List<ByteBuffer> released = new ArrayList<>();
        target.queueing = true;
        Outcome o = Outcome.of(send(source, Function.identity(), released::add, 4));
        source.emit(0);
        source.emit(1);
        source.emit(2);
        IllegalStateException boom = new IllegalStateException("boom");
        target.sent.get(0).sink().error(boom);
        assertFalse(source.cancelled, "cancelling the source waits for the scheduler");
        assertNull(o.error.get());
        scheduler.runAll();
        assertTrue(source.cancelled);
        assertEquals(2, target.withdrawn.size(), "the queued ones are withdrawn");
        assertEquals(3, released.size(), "every message is released, the failed one too");
        assertSame(boom, o.error.get());
        ByteBuffer late = source.emit(3);
        assertEquals(3, target.sent.size(), "what the source still emits is not sent");
        assertSame(late, released.get(3), "but released at once");
    }

    /**
     * The source fails on its thread while its last send completes on the completion loop: the stream fails.
     * Seeing no send in flight, the completion must not take the failing source for one that completed.
     */
    @Test
    void aSourceThatFailsWhileItsLastSendCompletesFailsTheStream() throws Exception {
        IllegalStateException boom = new IllegalStateException("boom");
        race(boom, t -> t.complete(0), source -> source.subscriber.onError(boom));
    }

    /**
     * The last send fails on the completion loop while the source completes: the stream fails. Seeing no send
     * in flight, the completing source must not end the stream as completed before the failure is told.
     */
    @Test
    void aLastSendThatFailsWhileTheSourceCompletesFailsTheStream() throws Exception {
        IllegalStateException boom = new IllegalStateException("boom");
        race(boom, t -> t.sent.get(0).sink().error(boom), source -> source.subscriber.onComplete());
    }

    /**
     * One message in flight; then the completion loop's {@code loopSide} and the source's {@code sourceSide}
     * start together, spinning, as often as it takes the race to land in every order. Each time the stream
     * must fail with {@code expected}.
     */
    private static void race(Throwable expected, Consumer<Target> loopSide, Consumer<Pushing> sourceSide)
            throws Exception {
        ExecutorService loop = Executors.newSingleThreadExecutor();
        try {
            for (int i = 0; i < 20_000; i++) {
                ByHand s = new ByHand();
                Target t = new Target();
                Pushing source = new Pushing();
                Outcome o = Outcome.of(new StreamSend<>(t, source, Function.identity(), null, 4, s));
                source.emit(0);
                AtomicInteger ready = new AtomicInteger();
                Future<?> loopDone = loop.submit(() -> {
                    startTogether(ready);
                    loopSide.accept(t);
                });
                startTogether(ready);
                sourceSide.accept(source);
                loopDone.get(10, TimeUnit.SECONDS);
                s.runAll();
                assertSame(expected, o.error.get(),
                        "round " + i + " ended " + (o.completed.get() ? "completed" : "not at all"));
            }
        } finally {
            loop.shutdownNow();
        }
    }

    private static void startTogether(AtomicInteger ready) {
        ready.incrementAndGet();
        while (ready.get() < 2) {
            Thread.onSpinWait();
        }
    }

    /**
     * Withdrawing a queued message lets the send queue post what waited behind it, so the stream withdraws
     * its last message first: otherwise an earlier one could be withdrawn and a later one posted, and the
     * peer would see a gap. Slots are reused, so the order is the stream's, not the slots'.
     */
    @Test
    void aCancelWithdrawsTheLastQueuedMessageFirst() {
        Pushing source = new Pushing();
        List<ByteBuffer> released = new ArrayList<>();
        target.queueing = true;
        Outcome o = Outcome.of(send(source, Function.identity(), released::add, 4));
        List<ByteBuffer> emitted = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            emitted.add(source.emit(i));
        }
        target.complete(0);
        target.complete(1);
        scheduler.runAll(); // releases 0 and 1, frees their slots and asks the source for two more
        assertEquals(List.of(4L, 2L), source.requests);
        emitted.add(source.emit(4)); // into slot 0
        emitted.add(source.emit(5)); // into slot 1
        o.subscription.dispose();
        assertEquals(List.of(emitted.get(5), emitted.get(4), emitted.get(3), emitted.get(2)), target.withdrawn);
    }

    @Test
    void aCancelStopsTheSourceAndWithdrawsTheQueuedMessages() {
        Pushing source = new Pushing();
        List<ByteBuffer> released = new ArrayList<>();
        target.queueing = true;
        Outcome o = Outcome.of(send(source, Function.identity(), released::add, 4));
        source.emit(0);
        source.emit(1);
        o.subscription.dispose();
        assertTrue(source.cancelled, "a cancel stops the source at once");
        assertEquals(2, target.withdrawn.size());
        scheduler.runAll();
        assertEquals(2, released.size(), "withdrawn messages are released on the scheduler");
        assertFalse(o.ended(), "a cancelled stream signals nothing");
    }

    @Test
    void aFailingContentFunctionReleasesItsMessageAndFailsTheStream() {
        Pushing source = new Pushing();
        List<ByteBuffer> released = new ArrayList<>();
        IllegalArgumentException boom = new IllegalArgumentException("content");
        Outcome o = Outcome.of(send(source, m -> {
            if (m.getInt(0) == 1) {
                throw boom;
            }
            return m;
        }, released::add, 4));
        source.emit(0);
        ByteBuffer bad = source.emit(1);
        assertEquals(1, target.sent.size());
        assertTrue(source.cancelled, "cancelled on the source's thread");
        assertEquals(List.of(bad), released, "released at once: it never reached the connection");
        scheduler.runAll();
        assertSame(boom, o.error.get());
    }

    @Test
    void aDisposedSchedulerSignalsOnTheCallingThreadRatherThanNever() {
        Pushing source = new Pushing();
        Outcome o = Outcome.of(send(source, Function.identity(), null, 4));
        source.emit(0);
        source.subscriber.onComplete();
        scheduler.rejecting = true;
        target.complete(0);
        assertTrue(o.completed.get());
    }

    @Test
    void aSynchronousSourceIsHandedOverInRunsUnderOneHoldOfTheLock() {
        List<Integer> released = new ArrayList<>();
        Outcome o = Outcome.of(send(Flux.range(0, 10), i -> ByteBuffer.allocate(4).putInt(0, i), released::add, 8));
        assertEquals(8, target.sent.size(), "the window's worth, polled at the subscription");
        for (Target.Sent s : target.sent) {
            assertEquals(1, s.holds(), "under the lock: one doorbell for the run");
            assertEquals(0, s.hold(), "one hold");
        }
        for (int i = 0; i < 4; i++) {
            target.complete(i);
        }
        assertEquals(8, target.sent.size());
        scheduler.runAll();
        assertEquals(10, target.sent.size(), "half the window finished: the rest is polled");
        for (int i = 4; i < 10; i++) {
            target.complete(i);
        }
        assertFalse(o.ended());
        scheduler.runAll();
        assertTrue(o.completed.get());
        assertEquals(10, released.size());
        for (int i = 0; i < 10; i++) {
            assertEquals(i, target.sent.get(i).bytes().getInt(0), "in order");
        }
    }

    @Test
    void aSynchronousSourceLongerThanARunIsPolledInRunsOfThirtyTwo() {
        Outcome.of(send(Flux.range(0, 100), i -> ByteBuffer.allocate(4).putInt(0, i), null, 64));
        assertEquals(64, target.sent.size());
        for (int i = 0; i < 64; i++) {
            assertEquals(1, target.sent.get(i).holds());
            assertEquals(i / 32, target.sent.get(i).hold(), "message " + i);
        }
    }

    @Test
    void anAsynchronousSourceIsDrainedAsItSignals() {
        Sinks.Many<ByteBuffer> sink = Sinks.many().unicast().onBackpressureBuffer();
        Outcome o = Outcome.of(send(sink.asFlux(), Function.identity(), null, 4));
        for (int i = 0; i < 5; i++) {
            sink.tryEmitNext(ByteBuffer.allocate(4).putInt(0, i));
        }
        assertEquals(4, target.sent.size(), "the window");
        target.complete(0);
        target.complete(1);
        scheduler.runAll();
        assertEquals(5, target.sent.size());
        sink.tryEmitComplete();
        assertFalse(o.ended());
        for (int i = 2; i < 5; i++) {
            target.complete(i);
        }
        scheduler.runAll();
        assertTrue(o.completed.get());
    }

    @Test
    void aCancelledAsynchronousSourceReleasesWhatItStillQueues() {
        Sinks.Many<ByteBuffer> sink = Sinks.many().unicast().onBackpressureBuffer();
        List<ByteBuffer> released = new ArrayList<>();
        target.queueing = true;
        Outcome o = Outcome.of(send(sink.asFlux(), Function.identity(), released::add, 2));
        for (int i = 0; i < 5; i++) {
            sink.tryEmitNext(ByteBuffer.allocate(4).putInt(0, i));
        }
        assertEquals(2, target.sent.size());
        o.subscription.dispose();
        assertEquals(3, released.size(), "the three the source queued, at once");
        scheduler.runAll();
        assertEquals(5, released.size(), "and the two withdrawn, on the scheduler");
    }
}
