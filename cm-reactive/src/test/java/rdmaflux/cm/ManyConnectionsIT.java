package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.testing.RdmaResources;

/** 100 concurrent connections from this process to one server process, all exchanging checked messages. */
class ManyConnectionsIT {
    private static final Duration T = Duration.ofMinutes(4);
    private static final int CONNECTIONS = 100;
    private static final int MESSAGES = 30;
    private static final int[] SIZES = {1, 17, 256, 4096, 8192};
    /** 100 handshakes at once on an emulated CPU: far longer steps than a real machine needs. */
    private static final Map<Step, java.util.concurrent.atomic.LongAccumulator> SLOWEST = new java.util.EnumMap<>(Step.class);
    private static final ConnectionOptions OPTIONS = PeerMain.OPTIONS.toBuilder()
            .timeout(Step.ADDRESS, Duration.ofSeconds(30)).timeout(Step.ROUTE, Duration.ofSeconds(30))
            .recorder(new RdmaRecorder() {
                @Override
                public void stepDuration(Step step, long nanos) {
                    SLOWEST.get(step).accumulate(nanos / 1_000_000);
                }
            }).build();

    static {
        for (Step s : Step.values()) {
            SLOWEST.put(s, new java.util.concurrent.atomic.LongAccumulator(Math::max, 0));
        }
    }

    @Test
    void hundredConcurrentConnectionsToOneServerProcess() {
        Map<String, Integer> baseline = Resources.baseline();
        try (PeerProcess peer = PeerProcess.start("echo")) {
            // The server process's own objects (its listener, its device context) stay until it ends.
            Map<String, Integer> withPeer = Resources.baseline();
            long start = System.nanoTime();
            List<RdmaConnection> conns = Flux.range(0, CONNECTIONS)
                    .flatMap(i -> RdmaConnection.connect(peer.address(), OPTIONS), CONNECTIONS)
                    .collectList().block(T);
            long connected = System.nanoTime();
            assertEquals(CONNECTIONS, conns.size());
            // All open at once: a QP per connection on each side (both processes share the device).
            Map<String, Integer> open = RdmaResources.snapshot();
            assertTrue(open.get("qp") - baseline.get("qp") >= 2 * CONNECTIONS, "qps while connected: " + open);

            AtomicInteger verified = new AtomicInteger();
            Flux.fromIterable(conns).flatMap(c -> {
                // Each connection gets its own sequence offset: a message crossing to another
                // connection would fail the check.
                int base = conns.indexOf(c) * MESSAGES;
                Mono<Long> echoes = c.receive().take(MESSAGES).index().doOnNext(t -> {
                    RdmaMessage m = t.getT2();
                    try {
                        int seq = base + t.getT1().intValue();
                        Payloads.verify(m.data(), seq, size(seq));
                        verified.incrementAndGet();
                    } finally {
                        m.release();
                    }
                }).count();
                return Mono.zip(echoes, c.send(Flux.range(base, MESSAGES).map(s -> Payloads.message(s, size(s))))
                        .then(Mono.just(0L))).map(t -> t.getT1());
            }, CONNECTIONS).collectList().block(T).forEach(n -> assertEquals(MESSAGES, n));
            long exchanged = System.nanoTime();
            assertEquals(CONNECTIONS * MESSAGES, verified.get());

            Flux.fromIterable(conns).flatMap(c -> {
                c.dispose();
                return c.onDispose();
            }).then().block(T);
            System.out.printf("many: %d connections up in %d ms (slowest step durations, ms: %s), %d checked echoes "
                    + "in %d ms, closed in %d ms%n", CONNECTIONS, (connected - start) / 1_000_000, SLOWEST,
                    verified.get(), (exchanged - connected) / 1_000_000, (System.nanoTime() - exchanged) / 1_000_000);
            // The server process closed its sides when our orderly closes arrived; it is still running.
            Resources.awaitBaseline(withPeer, Duration.ofSeconds(60), "after closing " + CONNECTIONS + " connections");
        }
        Resources.awaitBaseline(baseline, Duration.ofSeconds(60), "after the server process ended");
    }

    private static int size(int seq) {
        return SIZES[seq % SIZES.length];
    }
}
