package rdmaflux.cm;

import rdmaflux.cm.internal.lifecycle.Server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import rdmaflux.verbs.CmId;

/** The filter's two forms and what the server makes of a filter that fails or never answers. */
class AcceptFilterTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final InetSocketAddress PEER = new InetSocketAddress("192.0.2.1", 7471);
    private static final Duration ACCEPT_TIMEOUT = Duration.ofSeconds(10);

    /** The server's view of one filter's answer, on a virtual clock. */
    private static StepVerifier.FirstStep<AcceptFilter.Decision> decide(AcceptFilter filter) {
        return StepVerifier.withVirtualTime(() -> Server.decision(filter, PEER, new byte[] {1},
                Mono.delay(ACCEPT_TIMEOUT, VirtualTimeScheduler.get()), VirtualTimeScheduler.get()));
    }

    private static boolean rejectsWithoutData(AcceptFilter.Decision d) {
        return !d.isAccept() && d.rejectData().length == 0;
    }

    @Test
    void aSynchronousFilterIsCalledWithThePeerAndItsData() {
        AtomicReference<byte[]> seen = new AtomicReference<>();
        AcceptFilter f = (peer, data) -> {
            seen.set(data);
            return peer.equals(PEER) ? AcceptFilter.Decision.accept() : AcceptFilter.Decision.reject(new byte[0]);
        };
        decide(f).expectNextMatches(AcceptFilter.Decision::isAccept).verifyComplete();
        assertArrayEquals(new byte[] {1}, seen.get());
    }

    @Test
    void anAsynchronousFilterAnswersLaterWithinTheAcceptTimeout() {
        byte[] why = {7, 7};
        AcceptFilter f = AcceptFilter.async((peer, data) -> Mono.just(AcceptFilter.Decision.reject(why))
                .delayElement(ACCEPT_TIMEOUT.minusSeconds(1)));
        decide(f).expectSubscription()
                .expectNoEvent(ACCEPT_TIMEOUT.minusSeconds(1))
                .expectNextMatches(d -> !d.isAccept() && java.util.Arrays.equals(why, d.rejectData()))
                .verifyComplete();
    }

    @Test
    void aFilterThatNeverAnswersIsRejectedWhenTheAcceptTimeoutPasses() {
        AtomicBoolean cancelled = new AtomicBoolean();
        AcceptFilter f = AcceptFilter.async((peer, data) -> Mono.<AcceptFilter.Decision>never()
                .doOnCancel(() -> cancelled.set(true)));
        decide(f).expectSubscription()
                .expectNoEvent(ACCEPT_TIMEOUT.minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .expectNextMatches(AcceptFilterTest::rejectsWithoutData)
                .verifyComplete();
        assertTrue(cancelled.get(), "the abandoned filter Mono was not cancelled");
    }

    @Test
    void aFilterThatFailsInAnyWayRejectsAtOnce() {
        AcceptFilter erroring = AcceptFilter.async((peer, data) -> Mono.error(new IllegalStateException("down")));
        AcceptFilter empty = AcceptFilter.async((peer, data) -> Mono.empty());
        AcceptFilter nullMono = AcceptFilter.async((peer, data) -> null);
        AcceptFilter throwingAsync = AcceptFilter.async((peer, data) -> {
            throw new IllegalArgumentException("bug before the Mono");
        });
        AcceptFilter throwing = (peer, data) -> {
            throw new IllegalStateException("bug");
        };
        AcceptFilter nullDecision = (peer, data) -> null;
        for (AcceptFilter f : new AcceptFilter[] {erroring, empty, nullMono, throwingAsync, throwing, nullDecision}) {
            decide(f).expectNextMatches(AcceptFilterTest::rejectsWithoutData).verifyComplete();
        }
    }

    @Test
    void withoutAnAcceptTimeoutASlowFilterIsWaitedFor() {
        AcceptFilter f = AcceptFilter.async((peer, data) -> Mono.just(AcceptFilter.Decision.accept())
                .delayElement(Duration.ofHours(1)));
        StepVerifier.withVirtualTime(() -> Server.decision(f, PEER, new byte[0], null, VirtualTimeScheduler.get()))
                .expectSubscription()
                .expectNoEvent(Duration.ofHours(1).minusMillis(1))
                .thenAwait(Duration.ofMillis(1))
                .expectNextMatches(AcceptFilter.Decision::isAccept)
                .verifyComplete();
    }

    @Test
    void theFilterRunsOnTheSchedulerNotOnTheCallersThread() {
        Scheduler scheduler = Schedulers.newSingle("filter-test");
        try {
            AtomicReference<String> syncThread = new AtomicReference<>();
            AtomicReference<String> asyncThread = new AtomicReference<>();
            AcceptFilter sync = (peer, data) -> {
                syncThread.set(Thread.currentThread().getName());
                return AcceptFilter.Decision.accept();
            };
            AcceptFilter async = AcceptFilter.async((peer, data) -> {
                asyncThread.set(Thread.currentThread().getName()); // building the Mono is user code too
                return Mono.just(AcceptFilter.Decision.accept());
            });
            // The caller stands for the CM loop: the decision is made before the caller gets it back.
            StepVerifier.create(Server.decision(sync, PEER, new byte[0], Mono.delay(T), scheduler))
                    .expectNextMatches(AcceptFilter.Decision::isAccept).verifyComplete();
            StepVerifier.create(Server.decision(async, PEER, new byte[0], Mono.delay(T), scheduler))
                    .expectNextMatches(AcceptFilter.Decision::isAccept).verifyComplete();
            assertTrue(syncThread.get().startsWith("filter-test"), syncThread.get());
            assertTrue(asyncThread.get().startsWith("filter-test"), asyncThread.get());
        } finally {
            scheduler.dispose();
        }
    }

    @Test
    void aSchedulerThatCannotKeepTimeStillGetsDecisionsAndTimeouts() {
        // Schedulers.immediate() rejects delayed tasks: the accept timeout must not be scheduled on it (it
        // was, and every request was rejected at once with a TimeoutException naming the full timeout).
        StepVerifier.create(Server.decision(AcceptFilter.ACCEPT_ALL, PEER, new byte[0], Mono.delay(T),
                        Schedulers.immediate()))
                .expectNextMatches(AcceptFilter.Decision::isAccept).verifyComplete();
        AcceptFilter never = AcceptFilter.async((peer, data) -> Mono.never());
        long start = System.nanoTime();
        StepVerifier.create(Server.decision(never, PEER, new byte[0], Mono.delay(Duration.ofMillis(200)),
                        Schedulers.immediate()))
                .expectNextMatches(AcceptFilterTest::rejectsWithoutData).verifyComplete();
        assertTrue(System.nanoTime() - start >= Duration.ofMillis(200).toNanos(), "rejected before the deadline");
    }

    @Test
    void theSynchronousFormStaysALambdaAndItsAsyncViewCallsIt() {
        AcceptFilter f = (peer, data) -> AcceptFilter.Decision.reject(data);
        AcceptFilter.Decision d = f.decideAsync(PEER, new byte[] {3}).block(T);
        assertFalse(d.isAccept());
        assertArrayEquals(new byte[] {3}, d.rejectData());
        AcceptFilter async = AcceptFilter.async((peer, data) -> Mono.just(AcceptFilter.Decision.accept()));
        assertThrows(UnsupportedOperationException.class, () -> async.decide(PEER, new byte[0]));
        assertTrue(async.decideAsync(PEER, new byte[0]).block(T).isAccept());
    }

    @Test
    void rejectPrivateDataIsLimitedToTheIbCmRejField() {
        // IB_CM_REJ_PRIVATE_DATA_SIZE; every layer must agree on it.
        assertEquals(148, AcceptFilter.MAX_REJECT_PRIVATE_DATA);
        assertEquals(148, CmId.MAX_REJECT_PRIVATE_DATA);
        byte[] max = new byte[148];
        max[147] = 42;
        AcceptFilter.Decision d = AcceptFilter.Decision.reject(max);
        max[147] = 0;
        assertEquals(42, d.rejectData()[147], "the decision keeps its own copy");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AcceptFilter.Decision.reject(new byte[149]));
        assertTrue(e.getMessage().contains("148"), e.getMessage());
        // The full-queue marker fits, with room to spare.
        assertTrue(Server.QUEUE_FULL.length <= AcceptFilter.MAX_REJECT_PRIVATE_DATA);
    }

    @Test
    void serverOptionsAreImmutableAndChecked() {
        ServerOptions d = ServerOptions.defaults();
        assertEquals(ServerOptions.DEFAULT_ACCEPT_QUEUE, d.acceptQueue());
        ServerOptions small = d.toBuilder().acceptQueue(4).build();
        assertEquals(4, small.acceptQueue());
        assertEquals(ServerOptions.DEFAULT_ACCEPT_QUEUE, d.acceptQueue(), "toBuilder().acceptQueue changed the original");
        assertEquals(ServerOptions.MAX_ACCEPT_QUEUE,
                ServerOptions.builder().acceptQueue(ServerOptions.MAX_ACCEPT_QUEUE).build().acceptQueue());
        assertEquals(d.toString(), ServerOptions.builder().build().toString());
        for (int bad : new int[] {0, -1, Integer.MIN_VALUE, ServerOptions.MAX_ACCEPT_QUEUE + 1, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> d.toBuilder().acceptQueue(bad));
            assertTrue(e.getMessage().contains("acceptQueue"), e.getMessage());
        }
        assertEquals("acceptQueue must be 1..65535, got 0",
                assertThrows(IllegalArgumentException.class, () -> ServerOptions.builder().acceptQueue(0)).getMessage());
    }
}
