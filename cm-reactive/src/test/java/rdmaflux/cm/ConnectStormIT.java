package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import rdmaflux.testing.RdmaTestEnv;

/**
 * A connect storm against a server whose accept queue is small and whose subscriber is slow: the queue
 * bounds what the server allocates, the excess is rejected at once, and nothing leaks on either side.
 * The server process ({@code PeerMain storm}) takes one connection at a time, the next 100 ms after the
 * previous one closed.
 */
class ConnectStormIT {
    /** The storm takes about 80 s at the reference speed; the bound grows with a slower machine's. */
    private static final Duration T = rdmaflux.testing.RdmaTestEnv.scaled(Duration.ofMinutes(3));
    private static final int REQUESTS = 1000;
    /** Connects in flight at once from the client JVM. */
    private static final int CONCURRENCY = 32;
    /**
     * Server objects allowed beyond the accept queue: the one connection the subscriber took and is
     * echoing on, and one more for a sample taken while it hands over to the next.
     */
    private static final int MARGIN = 2;
    private static final Pattern PID = Pattern.compile("\\bpid (\\d+)\\b");

    /** How one connect request ended, as the client saw it. */
    private enum Outcome {
        ECHOED, QUEUE_FULL, CANCELLED, OTHER_FAILURE
    }

    /** A connection the client got whose echo failed: the one outcome that must never happen. */
    private static final class EchoFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        EchoFailed(Throwable cause) {
            super("echo failed on an established connection: " + cause, cause);
        }
    }

    @Test
    void thousandMostlyAbandonedConnectsNeitherExhaustNorLeak() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        try (PeerProcess peer = PeerProcess.start("storm")) {
            Map<String, Integer> withPeer = Resources.baseline();
            long pid = peer.pid();
            Map<String, Integer> idle = objectsOf(pid);
            // The counting must see the server at all, or every bound below would hold vacuously.
            assertTrue(idle.get("cm_id") >= 1, "the server's listening CM id is not counted: " + idle);
            Map<String, Integer> peak = new ConcurrentHashMap<>();
            AtomicInteger samples = new AtomicInteger();
            AtomicInteger peakRssKb = new AtomicInteger();
            AtomicBoolean storming = new AtomicBoolean(true);
            Thread sampler = Thread.ofPlatform().daemon().name("storm-sampler").start(() -> {
                while (storming.get()) {
                    // The two kinds the bounds are about: each listing takes long under emulation.
                    objectsOf(pid, List.of("qp", "cm_id")).forEach((k, v) -> peak.merge(k, v, Math::max));
                    peakRssKb.accumulateAndGet(rssKb(pid), Math::max);
                    samples.incrementAndGet();
                    Resources.sleep(100);
                }
            });

            Random random = new Random(15);
            long start = System.nanoTime();
            Map<Outcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();
            List<Throwable> others = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            // Decide every request's fate up front, from the seed: half are abandoned after a random delay
            // (at any step: resolving, connecting, waiting in the server's queue, or mid-echo).
            long[] abandonAfter = new long[REQUESTS];
            for (int i = 0; i < REQUESTS; i++) {
                abandonAfter[i] = random.nextBoolean() ? random.nextInt(400) : -1;
            }
            try {
                Flux.range(0, REQUESTS)
                        .flatMap(i -> attempt(peer.address(), i, abandonAfter[i]).onErrorResume(e -> {
                            others.add(e);
                            return Mono.just(Outcome.OTHER_FAILURE);
                        }), CONCURRENCY)
                        .doOnNext(o -> outcomes.computeIfAbsent(o, k -> new AtomicInteger()).incrementAndGet())
                        .then().block(T);
            } finally {
                storming.set(false);
                sampler.join(TimeUnit.SECONDS.toMillis(30));
            }
            long stormMillis = (System.nanoTime() - start) / 1_000_000;
            System.out.printf("storm: %d requests in %d ms: %s; server objects idle %s, peak %s (accept queue %d, "
                            + "%d samples), peak server RSS %d MiB; other failures: %s%n", REQUESTS, stormMillis,
                    outcomes, idle, peak, PeerMain.STORM_QUEUE, samples.get(), peakRssKb.get() / 1024,
                    summary(others));

            assertTrue(others.stream().noneMatch(e -> e instanceof EchoFailed), "connections that did not echo: "
                    + others);
            assertEquals(REQUESTS, outcomes.values().stream().mapToInt(AtomicInteger::get).sum());
            assertTrue(count(outcomes, Outcome.ECHOED) > 0, "no connection got through: " + outcomes);
            assertTrue(count(outcomes, Outcome.QUEUE_FULL) > 0, "the queue never overflowed: " + outcomes);
            assertTrue(samples.get() > 5, "too few samples of the server's objects: " + samples.get());
            // The bound: the accept queue's places (each holds its connection's objects until they are freed
            // or the subscriber takes it) plus the one the subscriber holds.
            int queuePairs = peak.getOrDefault("qp", 0) - idle.getOrDefault("qp", 0);
            assertTrue(queuePairs > 0, "no sample saw an accepted connection's queue pair: " + peak);
            assertTrue(queuePairs <= PeerMain.STORM_QUEUE + MARGIN, "server queue pairs peaked at " + queuePairs
                    + " beyond idle; bound " + PeerMain.STORM_QUEUE + " + " + MARGIN);
            // CM ids also count requests the kernel holds before the server reads them: the listen backlog,
            // which follows the accept queue.
            int cmIds = peak.getOrDefault("cm_id", 0) - idle.getOrDefault("cm_id", 0);
            assertTrue(cmIds <= 2 * PeerMain.STORM_QUEUE + MARGIN, "server CM ids peaked at " + cmIds
                    + " beyond idle; bound 2 x " + PeerMain.STORM_QUEUE + " + " + MARGIN);

            // The server survived and still serves: a fresh client gets its echo.
            assertTrue(peer.isAlive(), "the server process died");
            RdmaConnection last = RdmaConnection.connect(peer.address(), PeerMain.STORM_OPTIONS)
                    .retryWhen(RdmaRetry.reconnect(20, Duration.ofMillis(200))).block(T);
            echo(last, 123_456).block(T);
            last.disposeNow(T);
            Resources.awaitBaseline(withPeer, T, "after the storm, with the server still running");
            assertEquals(idle, objectsOf(pid), "the server's own objects after the storm");
        }
        Resources.awaitBaseline(baseline, T, "after the storm's server ended");
    }

    /** One connect request: abandoned after {@code abandonAfterMs} (if not negative), or echoed once. */
    private static Mono<Outcome> attempt(InetSocketAddress server, int i, long abandonAfterMs) {
        Mono<Outcome> run = RdmaConnection.connect(server, PeerMain.STORM_OPTIONS)
                .flatMap(c -> echo(c, i).onErrorMap(EchoFailed::new).thenReturn(Outcome.ECHOED)
                        .doFinally(s -> c.dispose()))
                .onErrorResume(RdmaCmException.Rejected.class, r -> r.isAcceptQueueFull()
                        ? Mono.just(Outcome.QUEUE_FULL) : Mono.error(r));
        if (abandonAfterMs < 0) {
            return run;
        }
        // Whichever comes first: the cancel loses the connect (or the echo) at that moment.
        return Mono.firstWithSignal(run, Mono.delay(Duration.ofMillis(abandonAfterMs)).thenReturn(Outcome.CANCELLED));
    }

    /** One message there and back, checked. */
    private static Mono<Void> echo(RdmaConnection c, int seq) {
        Mono<byte[]> reply = c.receiveBytes().next();
        return Mono.zip(reply, c.send(Payloads.message(seq, 64)).then(Mono.just(0)))
                .doOnNext(t -> Payloads.verify(t.getT1(), seq, 64))
                .timeout(rdmaflux.testing.RdmaTestEnv.scaled(Duration.ofSeconds(60)))
                .then();
    }

    @Test
    void aFullAcceptQueueRejectsAtOnceUntilTheSubscriberTakesAConnection() {
        Map<String, Integer> baseline = Resources.baseline();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), PeerMain.STORM_OPTIONS,
                AcceptFilter.ACCEPT_ALL, ServerOptions.builder().acceptQueue(2).build()).block(T);
        try {
            // Nobody has subscribed to connections() yet: no demand, so established connections stay queued.
            RdmaConnection a = RdmaConnection.connect(server.address(), PeerMain.STORM_OPTIONS).block(T);
            RdmaConnection b = RdmaConnection.connect(server.address(), PeerMain.STORM_OPTIONS).block(T);
            Duration connectTimeout = PeerMain.STORM_OPTIONS.timeout(Step.CONNECT);
            long rejectStart = System.nanoTime();
            AtomicReference<Throwable> third = new AtomicReference<>();
            StepVerifier.create(RdmaConnection.connect(server.address(), PeerMain.STORM_OPTIONS))
                    .consumeErrorWith(third::set).verify(T);
            Duration took = Duration.ofNanos(System.nanoTime() - rejectStart);
            RdmaCmException.Rejected r = assertInstanceOf(RdmaCmException.Rejected.class, third.get());
            assertTrue(r.isAcceptQueueFull(), "not the full-queue rejection: " + r + " " + new String(r.privateData(),
                    StandardCharsets.US_ASCII));
            assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, r.reason());
            assertTrue(r.isRetryable(), "a full queue may have room later");
            assertTrue(took.compareTo(connectTimeout.dividedBy(4)) < 0, "the rejection took " + took);

            // Demand for one connection frees one place: the next request is accepted.
            List<RdmaConnection> taken = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            reactor.core.publisher.BaseSubscriber<RdmaConnection> subscriber = new reactor.core.publisher.BaseSubscriber<>() {
                @Override
                protected void hookOnSubscribe(org.reactivestreams.Subscription s) {
                    request(1);
                }

                @Override
                protected void hookOnNext(RdmaConnection c) {
                    taken.add(c);
                    EchoServer.echo(c, PeerMain.STORM_OPTIONS);
                }
            };
            server.connections().subscribe(subscriber);
            RdmaConnection c = RdmaConnection.connect(server.address(), PeerMain.STORM_OPTIONS)
                    .retryWhen(RdmaRetry.reconnect(20, Duration.ofMillis(100))).block(T);
            assertEquals(1, taken.size(), "the subscriber asked for one");
            echo(a, 1).block(T); // the first connection, taken first, echoes
            subscriber.request(2);
            echo(b, 2).block(T);
            echo(c, 3).block(T);
            subscriber.dispose();
            for (RdmaConnection x : List.of(a, b, c)) {
                x.disposeNow(T);
            }
        } finally {
            server.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after the full-queue test");
    }

    private static int count(Map<Outcome, AtomicInteger> outcomes, Outcome o) {
        AtomicInteger n = outcomes.get(o);
        return n == null ? 0 : n.get();
    }

    private static Map<String, Long> summary(List<Throwable> errors) {
        Map<String, Long> bytype = new TreeMap<>();
        synchronized (errors) {
            for (Throwable e : errors) {
                bytype.merge(e.getClass().getSimpleName(), 1L, Long::sum);
            }
        }
        return bytype;
    }

    /**
     * The kernel RDMA objects a process owns ({@code rdma resource show qp|cm_id|cq|mr}, or the kinds given). The kernel
     * records the thread that created each object, and prints that thread's id as its {@code pid}: the
     * server's objects are those of any of its threads (the CM thread makes them).
     */
    private static Map<String, Integer> objectsOf(long pid) {
        return objectsOf(pid, List.of("qp", "cm_id", "cq", "mr"));
    }

    private static Map<String, Integer> objectsOf(long pid, List<String> kinds) {
        java.util.Set<Long> threads = threadsOf(pid);
        Map<String, Integer> counts = new TreeMap<>();
        for (String kind : kinds) {
            int n = 0;
            Matcher m = PID.matcher(run("rdma", "resource", "show", kind));
            while (m.find()) {
                if (threads.contains(Long.parseLong(m.group(1)))) {
                    n++;
                }
            }
            counts.put(kind, n);
        }
        return counts;
    }

    private static java.util.Set<Long> threadsOf(long pid) {
        java.util.Set<Long> ids = new java.util.HashSet<>();
        ids.add(pid);
        try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            tasks.forEach(t -> ids.add(Long.parseLong(t.getFileName().toString())));
        } catch (IOException e) {
            // the process ended: only its pid
        }
        return ids;
    }

    private static int rssKb(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Integer.parseInt(line.replaceAll("\\D", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            // the process ended
        }
        return 0;
    }

    private static String run(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError(String.join(" ", cmd) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new AssertionError("cannot run " + cmd[0], e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
