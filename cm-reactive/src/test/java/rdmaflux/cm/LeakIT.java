package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;

/**
 * 10,000 connect/dispose cycles leave the kernel's RDMA object counts, the loops' threads and the JVM's
 * direct memory (where every connection's buffers live) where they started.
 */
class LeakIT {
    private static final Duration T = Duration.ofMinutes(25);
    private static final int CYCLES = 10_000;
    /**
     * Cycles in flight at once. One cycle (resolve, route, handshake, orderly close on both sides) takes
     * ~0.3 s of emulated CPU in the sandbox, so 1,000 strictly one after another would take ~5 minutes;
     * a few at a time overlap the waits, and mix connects with closes as a busy server sees them.
     */
    private static final int CONCURRENCY = 4;

    @Test
    @org.junit.jupiter.api.Timeout(value = 25, unit = java.util.concurrent.TimeUnit.MINUTES)
    void tenThousandConnectDisposeCyclesLeakNothing() {
        // Every connect request the server took ends in one outcome: established (then delivered), or
        // failed. A client that disconnects at once can be failed on the server side when its RTU was lost
        // and its DREQ came first (the server never saw it established): then the client saw a connection
        // the server did not deliver, and that is the CM's protocol, not a leak.
        AtomicInteger serverEstablished = new AtomicInteger();
        AtomicInteger serverFailed = new AtomicInteger();
        RdmaRecorder outcomes = new RdmaRecorder() {
            @Override
            public void connectOutcome(boolean isServer, Outcome outcome, String cause) {
                if (isServer) {
                    (outcome == Outcome.SUCCESS ? serverEstablished : serverFailed).incrementAndGet();
                }
            }
        };
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.defaults().toBuilder().recorder(outcomes).build(), AcceptFilter.ACCEPT_ALL)
                .block(T);
        try {
            AtomicInteger accepted = new AtomicInteger();
            // The server side closes itself when the client's orderly close arrives.
            server.connections().subscribe(c -> accepted.incrementAndGet());
            Map<String, Integer> baseline = Resources.baseline();
            Set<String> threads = rdmafluxThreads();
            long direct = directMemoryAfterGc();
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
                        if (n % 500 == 0) {
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
            System.out.printf("leak: the server established %d and delivered %d; %d failed before established%n",
                    serverEstablished.get(), accepted.get(), serverFailed.get());
            assertEquals(CYCLES, serverEstablished.get() + serverFailed.get(), "connect requests the server ended");
            assertEquals(serverEstablished.get(), accepted.get(), "established connections the server delivered");
            assertTrue(serverFailed.get() <= CYCLES / 100, "server-side failures: " + serverFailed.get());
            // In flight: CONCURRENCY clients and their server sides, plus closes still finishing.
            assertTrue(maxQps.get() <= 4 * CONCURRENCY, "qp count grew during the run: " + maxQps.get());
            assertEquals(threads, rdmafluxThreads(), "rdmaflux threads before and after");
            // Buffers of closed connections are off-heap memory the collector frees: after a collection
            // nothing of 10,000 connections (about 0.55 MiB each) may remain; 1 MiB allows for noise.
            long directAfter = directMemoryAfterGc();
            assertTrue(directAfter - direct < 1 << 20, "direct memory grew from " + direct + " to " + directAfter);
            System.out.printf("leak: %d cycles in %d ms (%d at a time); direct memory %d -> %d bytes, threads %s%n",
                    CYCLES, millis, CONCURRENCY, direct, directAfter, threads);
        } finally {
            server.disposeNow(Duration.ofSeconds(30));
        }
    }

    private static Set<String> rdmafluxThreads() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                // The leak detector's thread comes and goes with the messages of earlier tests, never with these
                // connections, which receive nothing. So do the loops' workers (prefix-worker-N), which start on
                // demand for earlier tests' large messages and end after a minute idle; the loops' end waits for
                // them (LoopsIT).
                .filter(n -> n.startsWith("rdmaflux-") && !n.equals("rdmaflux-leak-detector")
                        && !n.contains("-worker-"))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    /** The JVM's direct memory in use (where connection buffers are allocated) once collected garbage is freed. */
    private static long directMemoryAfterGc() {
        BufferPoolMXBean pool = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
        long used = Long.MAX_VALUE;
        // Cleaners run after a collection, on their own thread: settle until the figure stops falling.
        for (int i = 0; i < 10; i++) {
            System.gc();
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
            long now = pool.getMemoryUsed();
            if (now >= used) {
                return now;
            }
            used = now;
        }
        return used;
    }
}
