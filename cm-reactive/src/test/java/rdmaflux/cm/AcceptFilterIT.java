package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.testing.RdmaTestEnv;

/** An asynchronous accept filter on a real server: slow, refusing, failing and silent decisions. */
class AcceptFilterIT {
    private static final Duration T = Duration.ofSeconds(90);
    /** The server's accept timeout, which also bounds the filter's decision. */
    private static final Duration ACCEPT = Duration.ofSeconds(3);
    /** The client waits far longer than the server's accept timeout: a rejection must come first. */
    private static final ConnectionOptions CLIENT = ConnectionOptions.builder().timeout(Step.CONNECT,
            Duration.ofSeconds(40)).build();
    private static final ConnectionOptions SERVER = ConnectionOptions.builder().timeout(Step.ACCEPT, ACCEPT).build();

    /** What each client asks for in its private data, and the filter's answer to it. */
    private static Mono<AcceptFilter.Decision> decide(String ask, byte[] refusal) {
        return switch (ask) {
            case "ok" -> Mono.just(AcceptFilter.Decision.accept()).delayElement(Duration.ofMillis(300));
            case "no" -> Mono.just(AcceptFilter.Decision.reject(refusal)).delayElement(Duration.ofMillis(300));
            case "error" -> Mono.error(new IllegalStateException("the decision service is down"));
            default -> Mono.never(); // "never"
        };
    }

    private static Mono<Throwable> failureOf(InetSocketAddress server, String ask) {
        return RdmaConnection.connect(server, CLIENT.toBuilder().privateData(ask.getBytes(StandardCharsets.US_ASCII)).build())
                .flatMap(c -> {
                    c.dispose();
                    return Mono.<Throwable>error(new AssertionError("'" + ask + "' was accepted"));
                })
                .onErrorResume(e -> e instanceof RdmaCmException, Mono::just);
    }

    @Test
    void asyncFilterDecisionsFailuresAndSilenceNeverWedgeTheServer() {
        Map<String, Integer> baseline = Resources.baseline();
        byte[] refusal = new byte[AcceptFilter.MAX_REJECT_PRIVATE_DATA];
        for (int i = 0; i < refusal.length; i++) {
            refusal[i] = (byte) (i + 1); // non-zero to the last byte, so CM padding cannot pass for it
        }
        Set<String> filterThreads = ConcurrentHashMap.newKeySet();
        AcceptFilter filter = AcceptFilter.async((peer, data) -> {
            filterThreads.add(Thread.currentThread().getName());
            return decide(new String(data, StandardCharsets.US_ASCII), refusal);
        });
        try (EchoServer echo = new EchoServer(new InetSocketAddress(RdmaTestEnv.address(), 0), SERVER, filter)) {
            InetSocketAddress at = echo.address();

            // A refusal arrives later, with all 148 bytes of the filter's private data.
            RdmaCmException.Rejected no = assertInstanceOf(RdmaCmException.Rejected.class, failureOf(at, "no").block(T));
            assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, no.reason());
            assertArrayEquals(refusal, Arrays.copyOf(no.privateData(), refusal.length));
            assertFalse(no.isAcceptQueueFull());

            // A failing filter rejects at once; a silent one when the accept timeout has passed. Meanwhile
            // the server keeps accepting: three silent requests do not hold up a good one.
            long start = System.nanoTime();
            Mono<Throwable> error = failureOf(at, "error");
            List<Mono<Throwable>> silent = List.of(failureOf(at, "never"), failureOf(at, "never"), failureOf(at, "never"));
            Mono<Long> good = RdmaConnection.connect(at, CLIENT.toBuilder().privateData("ok".getBytes(StandardCharsets.US_ASCII)).build())
                    .flatMap(c -> {
                        Mono<byte[]> reply = c.receiveBytes().next();
                        return Mono.zip(reply, c.send(Payloads.message(9, 100)).thenReturn(0))
                                .doOnNext(t -> Payloads.verify(t.getT1(), 9, 100))
                                .map(t -> System.nanoTime())
                                .doFinally(s -> c.dispose());
                    });
            List<Object> results = Flux.merge(error.cast(Object.class),
                            Flux.merge(silent).map(e -> new Object[] {e, System.nanoTime()}),
                            good.cast(Object.class))
                    .collectList().block(T);
            assertEquals(5, results.size(), results.toString());
            long goodAt = results.stream().filter(Long.class::isInstance).mapToLong(Long.class::cast).findFirst()
                    .orElseThrow();
            for (Object r : results) {
                if (r instanceof Object[] pair) {
                    RdmaCmException.Rejected rej = assertInstanceOf(RdmaCmException.Rejected.class, pair[0]);
                    assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, rej.reason());
                    Duration after = Duration.ofNanos((long) pair[1] - start);
                    assertTrue(after.compareTo(ACCEPT) >= 0, "a silent filter was rejected after only " + after);
                    assertTrue(after.compareTo(ACCEPT.plusSeconds(15)) < 0, "a silent filter was rejected after " + after);
                    assertTrue(goodAt < (long) pair[1], "the good request waited for the silent ones");
                } else if (r instanceof RdmaCmException.Rejected rej) {
                    assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, rej.reason(), "the failing filter");
                } else {
                    assertInstanceOf(Long.class, r, "unexpected result " + r);
                }
            }
            System.out.printf("async filter: good echo after %d ms, silent filters rejected after %s ms%n",
                    (goodAt - start) / 1_000_000, results.stream().filter(Object[].class::isInstance)
                            .map(p -> (((long) ((Object[]) p)[1]) - start) / 1_000_000).toList());
            // Never the CM thread (rdmaflux-cm): the filter runs on the options' scheduler.
            assertTrue(filterThreads.stream().noneMatch(n -> n.endsWith("-cm")), "filter threads " + filterThreads);
        }
        Resources.awaitBaseline(baseline, T, "after the filter tests");
    }

    /**
     * A server disposed while its filter has not decided rejects those requests at once: their CM ids go with
     * the server, not when the accept timeout has passed (set here far beyond the test's bound), and their
     * clients learn of it at once rather than at their connect timeout.
     */
    @Test
    void disposingTheServerRejectsTheRequestsItsFilterIsDeciding() {
        Map<String, Integer> baseline = Resources.baseline();
        Set<String> asked = ConcurrentHashMap.newKeySet();
        AcceptFilter silent = AcceptFilter.async((peer, data) -> {
            asked.add(new String(data, StandardCharsets.US_ASCII));
            return Mono.never();
        });
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.builder().timeout(Step.ACCEPT, Duration.ofMinutes(30)).build(), silent).block(T);
        List<Mono<Throwable>> clients = List.of(failureOf(server.address(), "a"), failureOf(server.address(), "b"));
        Mono<List<Throwable>> failures = Flux.merge(clients).collectList().cache();
        failures.subscribe();
        org.awaitility.Awaitility.await().atMost(T).until(() -> asked.size() == 2);
        long disposed = System.nanoTime();
        server.disposeNow(T);
        List<Throwable> got = failures.block(T);
        Duration took = Duration.ofNanos(System.nanoTime() - disposed);
        assertEquals(2, got.size(), got.toString());
        for (Throwable e : got) {
            assertInstanceOf(RdmaCmException.Rejected.class, e, "a request the filter was deciding");
        }
        // Far below the clients' 40 s connect timeout and the server's 30 min accept timeout.
        Duration bound = RdmaTestEnv.scaled(Duration.ofSeconds(20));
        assertTrue(took.compareTo(bound) < 0, "rejected " + took + " after the dispose");
        Resources.awaitBaseline(baseline, bound, "after disposing a server with requests undecided");
    }
}
