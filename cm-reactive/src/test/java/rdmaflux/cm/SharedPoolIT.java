package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.testing.RdmaTestEnv;

/**
 * A server whose connections share a small receive pool ({@link SharedReceivePool}): a connection whose
 * application holds every message does not slow the others down, its own sender is held back by its
 * credits, no RNR happens, and the kernel's objects are back to the baseline afterwards.
 */
class SharedPoolIT {
    private static final Duration T = Duration.ofMinutes(3);
    private static final int QUOTA = 4;
    private static final int LOAN_CAP = 8;
    private static final SharedReceivePool POOL = SharedReceivePool.of(8 * (QUOTA + 3) + 16, QUOTA)
            .withReserve(16, LOAN_CAP);
    private static final ConnectionOptions OPTIONS = ConnectionOptions.defaults().toBuilder().bufferSize(1024)
            .receiveBuffers(8).sendBuffers(8).build();
    private static final byte[] SLOW = {1};
    private static final int FAST = 3;
    private static final int MESSAGES = 1_500;
    private static final int SIZE = 256;

    @Test
    void aClosedConnectionIsNotKeptReachableByThePoolsBuffers() {
        Map<String, Integer> baseline = Resources.baseline();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), OPTIONS,
                AcceptFilter.ACCEPT_ALL, ServerOptions.builder().sharedReceivePool(POOL).build()).block(T);
        java.util.concurrent.CompletableFuture<java.lang.ref.WeakReference<RdmaConnection>> accepted =
                new java.util.concurrent.CompletableFuture<>();
        try {
            server.connections().subscribe(c -> {
                accepted.complete(new java.lang.ref.WeakReference<>(c));
                c.receive().subscribe(RdmaMessage::release, e -> { });
            });
            RdmaConnection client = RdmaConnection.connect(server.address(), OPTIONS).block(T);
            // Messages land in pool buffers, which record the connection they were delivered on.
            Flux.range(0, 20).concatMap(i -> client.send(Payloads.message(i, SIZE))).then().block(T);
            java.lang.ref.WeakReference<RdmaConnection> served = Mono.fromFuture(accepted).block(T);
            client.disposeNow(T);
            org.awaitility.Awaitility.await().atMost(T).until(() -> {
                System.gc();
                return served.get() == null;
            });
        } finally {
            server.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after a pooled connection closed");
    }

    @Test
    void aConsumerHoldingItsMessagesSlowsOnlyItsOwnSender() {
        Map<String, Integer> baseline = Resources.baseline();
        ConcurrentLinkedQueue<RdmaMessage> held = new ConcurrentLinkedQueue<>();
        AtomicReference<Throwable> error = new AtomicReference<>();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), OPTIONS,
                AcceptFilter.ACCEPT_ALL, ServerOptions.builder().sharedReceivePool(POOL).build()).block(T);
        Map<String, Long> before = HwCounters.read();
        long alone;
        long beside;
        int slowSent;
        int heldAtMost;
        try {
            server.connections().subscribe(c -> {
                if (java.util.Arrays.equals(SLOW, c.peerPrivateData())) {
                    c.receive().subscribe(held::add, error::set); // holds everything
                } else {
                    AtomicInteger seq = new AtomicInteger();
                    c.receive().subscribe(m -> {
                        try {
                            Payloads.verify(m.data(), seq.getAndIncrement(), SIZE);
                        } catch (AssertionError e) {
                            error.set(e);
                        } finally {
                            m.release();
                        }
                    }, error::set);
                }
            });
            alone = fastRun(server);

            RdmaConnection slow = RdmaConnection.connect(server.address(), OPTIONS.toBuilder().privateData(SLOW).build())
                    .block(T);
            AtomicInteger slowCompleted = new AtomicInteger();
            var slowSends = Flux.range(0, 200).concatMap(i -> slow.send(Payloads.message(i, SIZE))
                    .doOnSuccess(v -> slowCompleted.incrementAndGet())).then().toFuture();
            long deadline = System.nanoTime() + T.toNanos();
            while (held.size() < QUOTA + LOAN_CAP && System.nanoTime() < deadline) {
                Resources.sleep(20);
            }
            beside = fastRun(server);
            // The slow connection holds its quota and its loans, no more: its sender waits for credits.
            heldAtMost = held.size();
            slowSent = slowCompleted.get();
            assertEquals(QUOTA + LOAN_CAP, heldAtMost, "messages the slow consumer holds");
            assertTrue(slowSent <= QUOTA + LOAN_CAP + 1, "the slow connection's sends completed: " + slowSent);
            // Once it lets go, its sender finishes.
            int released = 0;
            while (released < 200 && System.nanoTime() < deadline) {
                RdmaMessage m = held.poll();
                if (m == null) {
                    Resources.sleep(5);
                    continue;
                }
                Payloads.verify(m.data(), released++, SIZE);
                m.release();
            }
            assertEquals(200, released);
            Mono.fromFuture(slowSends).block(T);
            slow.disposeNow(T);
        } finally {
            server.disposeNow(T);
        }
        assertEquals(null, error.get());
        Map<String, Long> delta = HwCounters.delta(before, HwCounters.read());
        System.out.printf("shared pool: %d fast connections x %d messages in %d ms alone, %d ms beside a consumer "
                + "holding %d messages (its sender completed %d); device counter deltas %s%n", FAST, MESSAGES,
                alone / 1_000_000, beside / 1_000_000, heldAtMost, slowSent, delta);
        // Generous for a shared, emulated machine: the others keep at least a third of their rate.
        assertTrue(beside <= 3 * alone, "the fast connections took " + beside / 1_000_000 + " ms beside the slow one, "
                + alone / 1_000_000 + " ms alone");
        delta.forEach((k, v) -> {
            if (k.contains("rnr")) {
                assertEquals(0L, v, "RNR counter " + k + " moved: " + delta);
            }
        });
        Resources.awaitBaseline(baseline, Duration.ofSeconds(60), "after the shared pool's server was disposed");
    }

    /** {@return the nanoseconds {@value #FAST} connections take to send {@value #MESSAGES} messages each} */
    private static long fastRun(RdmaServer server) {
        List<RdmaConnection> conns = Flux.range(0, FAST).flatMap(i -> RdmaConnection.connect(server.address(), OPTIONS))
                .collectList().block(T);
        long start = System.nanoTime();
        Flux.fromIterable(conns).flatMap(c -> c.send(Flux.range(0, MESSAGES).map(i -> Payloads.message(i, SIZE))))
                .then().block(T);
        long took = System.nanoTime() - start;
        Flux.fromIterable(conns).flatMap(c -> {
            c.dispose();
            return c.onDispose();
        }).then().block(T);
        return took;
    }
}
