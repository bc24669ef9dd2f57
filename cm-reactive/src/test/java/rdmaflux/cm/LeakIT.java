package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;

/** 1,000 connect/dispose cycles leave the kernel's RDMA object counts where they started. */
class LeakIT {
    private static final Duration T = Duration.ofMinutes(5);
    private static final int CYCLES = 1_000;
    /**
     * Cycles in flight at once. One cycle (resolve, route, handshake, orderly close on both sides) takes
     * ~0.3 s of emulated CPU in the sandbox, so 1,000 strictly one after another would take ~5 minutes;
     * a few at a time overlap the waits, and mix connects with closes as a busy server sees them.
     */
    private static final int CONCURRENCY = 4;

    @Test
    void thousandConnectDisposeCyclesLeakNothing() {
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0)).block(T);
        try {
            AtomicInteger accepted = new AtomicInteger();
            // The server side closes itself when the client's orderly close arrives.
            server.connections().subscribe(c -> accepted.incrementAndGet());
            Map<String, Integer> baseline = Resources.baseline();
            long start = System.nanoTime();
            AtomicInteger done = new AtomicInteger();
            AtomicInteger maxQps = new AtomicInteger();
            Flux.range(0, CYCLES).flatMap(i -> RdmaConnection.connect(server.address())
                    .flatMap(c -> {
                        c.dispose();
                        return c.onDispose();
                    })
                    .publishOn(Schedulers.boundedElastic()) // the snapshot below runs a process: not on parallel
                    .doOnSuccess(v -> {
                        int n = done.incrementAndGet();
                        if (n % 100 == 0) {
                            // Midway the counts may only exceed the baseline by what is in flight.
                            int qps = RdmaResources.snapshot().get("qp") - baseline.get("qp");
                            maxQps.accumulateAndGet(qps, Math::max);
                            System.out.printf("leak: %d cycles, %d ms, qp above baseline %d%n", n,
                                    (System.nanoTime() - start) / 1_000_000, qps);
                        }
                    }), CONCURRENCY).then().block(T);
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertEquals(CYCLES, done.get());
            Resources.awaitBaseline(baseline, Duration.ofSeconds(60), "after " + CYCLES + " connect/dispose cycles");
            assertEquals(CYCLES, accepted.get(), "connections the server accepted");
            // In flight: CONCURRENCY clients and their server sides, plus closes still finishing.
            assertTrue(maxQps.get() <= 4 * CONCURRENCY, "qp count grew during the run: " + maxQps.get());
            System.out.printf("leak: %d cycles in %d ms (%d at a time)%n", CYCLES, millis, CONCURRENCY);
        } finally {
            server.disposeNow(Duration.ofSeconds(30));
        }
    }
}
