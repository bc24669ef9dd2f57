package rdmaflux.cm.internal.util;

import rdmaflux.cm.internal.loop.SignalSchedulerTest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.test.StepVerifier;

class HandoffTest {
    private static final Duration T = Duration.ofSeconds(10);

    /** A resource that records its releases. */
    private final List<String> released = new CopyOnWriteArrayList<>();
    private final AtomicReference<MonoSink<String>> sink = new AtomicReference<>();
    private final Mono<String> guarded = Handoff.guard(Mono.create(sink::set), String.class, released::add);

    @Test
    void aValueTheSubscriberReceivedIsItsOwn() {
        AtomicReference<String> got = new AtomicReference<>();
        Disposable d = guarded.subscribe(got::set);
        sink.get().success("c1");
        d.dispose();
        assertEquals("c1", got.get());
        assertEquals(List.of(), released);
    }

    @Test
    void aCancelBeforeTheValueReleasesIt() {
        Disposable d = guarded.subscribe(v -> { throw new AssertionError("delivered after cancel: " + v); });
        d.dispose();
        sink.get().success("c1");
        assertEquals(List.of("c1"), released);
    }

    @Test
    void aReentrantCancelFromInsideTheDeliveryKeepsIt() {
        // next() cancels its source before it passes the value on: the value still reaches the subscriber.
        StepVerifier.create(Flux.from(guarded).next())
                .then(() -> sink.get().success("c1"))
                .expectNext("c1")
                .expectComplete()
                .verify(T);
        assertEquals(List.of(), released);
    }

    /**
     * The race that leaked connections: the subscriber is cancelled from another thread while the value is
     * on its way, and then drops it, as {@code LambdaMonoSubscriber} does when {@code dispose()} wins.
     */
    @Test
    void aCancelRacingTheDeliveryFromAnotherThreadReleasesIt() throws InterruptedException {
        AtomicReference<Subscription> upstream = new AtomicReference<>();
        AtomicReference<String> dropped = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        guarded.subscribe(new CoreSubscriber<String>() {
            @Override
            public void onSubscribe(Subscription s) {
                upstream.set(s);
                s.request(1);
            }

            @Override
            public void onNext(String v) {
                Thread canceller = Thread.ofPlatform().start(() -> upstream.get().cancel());
                try {
                    canceller.join();
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                dropped.set(v);
            }

            @Override
            public void onError(Throwable t) {
                done.countDown();
            }

            @Override
            public void onComplete() {
                done.countDown();
            }
        });
        sink.get().success("c1");
        assertTrue(done.await(T.toSeconds(), TimeUnit.SECONDS));
        assertEquals("c1", dropped.get());
        assertEquals(List.of("c1"), released);
    }

    /**
     * The race that left an established connection pair behind in FaultsIT: {@code dispose()} marks the
     * subscriber cancelled, the value arrives and is dropped, its delivery and completion return, and only
     * then does the cancel reach the guard. The subscriber here takes {@code LambdaMonoSubscriber}'s two
     * steps with a pause between them, which the real one leaves to the thread scheduler.
     */
    @Test
    void aCancelArrivingAfterTheDroppedValueCompletedReleasesIt() throws InterruptedException {
        DisposingSubscriber subscriber = new DisposingSubscriber();
        guarded.subscribe(subscriber);
        Thread disposer = Thread.ofPlatform().start(subscriber::dispose);
        assertTrue(subscriber.marked.await(T.toSeconds(), TimeUnit.SECONDS));
        sink.get().success("c1"); // dropped: the subscriber is marked cancelled
        subscriber.proceed.countDown();
        disposer.join(T.toMillis());
        assertEquals(List.of(), subscriber.received);
        assertEquals(List.of("c1"), released);
    }

    /**
     * A subscriber that took the value keeps it when cancelled later from another thread: one that sends no
     * cancel after the value ({@code subscribe(consumer)}), and {@code flatMap}, which keeps its subscription
     * after the value and cancels it when it is cancelled itself.
     */
    @Test
    void aSubscriberThatTookTheValueKeepsItWhenCancelledLater() throws InterruptedException {
        AtomicReference<String> got = new AtomicReference<>();
        keptAfterALateCancel(guarded.subscribe(got::set), got);
        got.set(null);
        sink.set(null);
        keptAfterALateCancel(guarded.flatMap(v -> {
            got.set(v);
            return Mono.never();
        }).subscribe(), got);
    }

    private void keptAfterALateCancel(Disposable d, AtomicReference<String> got) throws InterruptedException {
        MonoSink<String> s = sink.get();
        Thread.ofPlatform().start(() -> s.success("c1")).join(T);
        Thread.ofPlatform().start(d::dispose).join(T);
        assertEquals("c1", got.get());
        assertEquals(List.of(), released);
    }

    /**
     * reactor-core#4396: {@code Mono.publishOn}, cancelled while it holds the value for its thread, forgets
     * the value without a discard. The servers, endpoints and memberships hop to their scheduler that way.
     */
    @Test
    void aValueHeldByMonoPublishOnWhenTheSubscriberCancelsIsReleased() throws InterruptedException {
        reactor.core.scheduler.Scheduler single = reactor.core.scheduler.Schedulers.newSingle("handoff-test");
        try {
            CountDownLatch hold = SignalSchedulerTest.occupy(single.createWorker());
            AtomicReference<MonoSink<String>> s = new AtomicReference<>();
            List<String> got = new CopyOnWriteArrayList<>();
            Disposable d = Handoff.guard(Mono.<String>create(s::set).publishOn(single), String.class, released::add)
                    .subscribe(got::add);
            Handoff.success(s.get(), "c1"); // publishOn holds it: its task waits behind the one holding the thread
            d.dispose();
            hold.countDown();
            assertEquals(List.of("c1"), released);
            CountDownLatch after = new CountDownLatch(1);
            single.schedule(after::countDown);
            assertTrue(after.await(T.toSeconds(), TimeUnit.SECONDS));
            assertEquals(List.of(), got);
            assertEquals(List.of("c1"), released);
        } finally {
            single.dispose();
        }
    }

    /**
     * {@code subscribe(consumer)} and {@code dispose()} from one thread against the value from another,
     * many times over: each value ends with exactly one owner, the consumer or the release.
     */
    @Test
    void disposeRacingTheValueLeavesEachValueWithOneOwner() throws Exception {
        int rounds = 20_000;
        java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            List<String> kept = new CopyOnWriteArrayList<>();
            for (int i = 0; i < rounds; i++) {
                String value = "c" + i;
                Disposable d = guarded.subscribe(kept::add);
                MonoSink<String> s = sink.get();
                java.util.concurrent.Future<?> delivery = other.submit(() -> Handoff.success(s, value));
                d.dispose();
                delivery.get(T.toSeconds(), TimeUnit.SECONDS);
            }
            // Each release happens before dispose() or the delivery returns.
            java.util.Set<String> owned = new java.util.HashSet<>(kept);
            for (String r : released) {
                assertTrue(owned.add(r), "released and kept: " + r);
            }
            assertEquals(rounds, owned.size(), "values with no owner");
        } finally {
            other.shutdownNow();
        }
    }

    /** A subscriber that cancels as {@code LambdaMonoSubscriber.dispose()} does, pausing between the steps. */
    private static final class DisposingSubscriber implements CoreSubscriber<String>, Scannable {
        final CountDownLatch marked = new CountDownLatch(1);
        final CountDownLatch proceed = new CountDownLatch(1);
        final List<String> received = new CopyOnWriteArrayList<>();
        private final AtomicReference<Subscription> upstream = new AtomicReference<>();
        private static final Subscription CANCELLED = new Subscription() {
            @Override
            public void request(long n) {
            }

            @Override
            public void cancel() {
            }
        };

        @Override
        public void onSubscribe(Subscription s) {
            upstream.set(s);
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(String v) {
            if (upstream.getAndSet(CANCELLED) != CANCELLED) {
                received.add(v);
            }
        }

        @Override
        public void onError(Throwable t) {
            upstream.set(CANCELLED);
        }

        @Override
        public void onComplete() {
            upstream.set(CANCELLED);
        }

        void dispose() {
            Subscription s = upstream.getAndSet(CANCELLED);
            marked.countDown();
            try {
                proceed.await(T.toSeconds(), TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (s != CANCELLED) {
                s.cancel();
            }
        }

        @Override
        public Object scanUnsafe(Attr key) {
            return key == Attr.CANCELLED ? upstream.get() == CANCELLED : null;
        }
    }

    @Test
    void anErrorReleasesNothing() {
        StepVerifier.create(guarded)
                .then(() -> sink.get().error(new IllegalStateException("refused")))
                .expectError(IllegalStateException.class)
                .verify(T);
        assertEquals(List.of(), released);
    }
}
