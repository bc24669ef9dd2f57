package rdmaflux.cm;

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

    @Test
    void anErrorReleasesNothing() {
        StepVerifier.create(guarded)
                .then(() -> sink.get().error(new IllegalStateException("refused")))
                .expectError(IllegalStateException.class)
                .verify(T);
        assertEquals(List.of(), released);
    }
}
