package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.ProcessSample;
import rdmaflux.testing.ProcessSampler;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.testing.SandboxHosts;

/**
 * The chaos run of the cross-host sandbox (docs/reliability.md, "Network and host faults"): this JVM on
 * host 1 keeps {@value #STREAMS_PER_PAIR} {@link ChaosStream}s to the echo server of every peer host, the
 * peer of host 2 as many to host 3's, and host 1 sends paced datagrams to a multicast group every peer
 * joined; meanwhile a seeded {@link ChaosSchedule} cuts and restores links, kills and restarts the peer
 * processes, restarts hosts and removes and re-adds their rxe device ({@link ChaosFaults}). The
 * {@link ChaosLedger} judges every failure as it happens, once a second; at the end every stream must
 * have resumed, and every host's kernel RDMA objects, threads, descriptors and direct memory must be
 * back at their baseline.
 *
 * <p>{@code RDMAFLUX_CHAOS_SEED} (or {@code -Drdmaflux.chaos.seed}) repeats a run; the seed is printed
 * first. {@code RDMAFLUX_CHAOS_SECONDS} is how long faults go on being started (30 s by default: every kind
 * once). {@code RDMAFLUX_CHAOS_MODE=soak} injects no fault and runs the streams, which churn their
 * connections, for that long, on as few as two hosts. {@code scripts/chaos} runs long ones and plots them.
 */
class ChaosHostsIT {
    static final int STREAMS_PER_PAIR = 3;
    static final int DATAGRAM = 200;
    /**
     * A peer JVM under emulation, with three VMs sharing two cores: tens of seconds to main, and a restart
     * competes with another host's boot; a restarted peer was seen to take more than 180 s on a loaded machine.
     */
    private static final Duration STARTUP = RdmaTestEnv.scaled(Duration.ofSeconds(180));
    private static final InetAddress GROUP = address("239.1.2.9");
    /** A long cut's least duration in the schedule: the detection bound at the reference speed, and 2 s. */
    private static final Duration LONG_CUT = Duration.ofSeconds(16);
    /** A host's time without a fault after one recovered: a few of the streams' reconnects and rounds. */
    private static final Duration QUIET = RdmaTestEnv.scaled(Duration.ofSeconds(10));
    /** The address and route steps' timeout at the reference speed, in seconds ({@link #options()}). */
    private static final int RESOLVE_SECONDS = 8;

    /**
     * Options of every chaos connection: a keepalive, so that an idle moment still detects a dead peer. The
     * address and route steps, local work plus an ARP exchange with a live peer, get {@value #RESOLVE_SECONDS}
     * s scaled: with three emulated hosts starting their streams at once on two cores, a host's CM loop or
     * kernel was seen to answer after more than 3 s with no fault on either end. Address, route and connect
     * together stay within {@link #hangBound()}, the bound of one attempt.
     */
    static ConnectionOptions options() {
        return CrossHostsIT.SLOW_HANDSHAKE.toBuilder().keepalive(Duration.ofSeconds(2))
                .timeout(Step.ADDRESS, RdmaTestEnv.scaled(Duration.ofSeconds(RESOLVE_SECONDS)))
                .timeout(Step.ROUTE, RdmaTestEnv.scaled(Duration.ofSeconds(RESOLVE_SECONDS)))
                .timeout(Step.CONNECT, RdmaTestEnv.scaled(Duration.ofSeconds(20))).build();
    }

    /** The transport's retry time: ACK timeout x (retries + 1), from the options. */
    static Duration retryTime() {
        ConnectionOptions o = options();
        return Duration.ofNanos((long) (4096.0 * (1L << o.ackTimeout())) * (o.retryCount() + 1));
    }

    /**
     * How long after a fault takes effect every connection across it has failed: the keepalive's
     * 1.5 x keepalive + twice the retry time (Soft-RoCE was measured taking up to twice it with a stream
     * in flight, docs/reliability.md), plus 3 s for the failure to reach a loop on a loaded host; scaled.
     */
    static Duration detectBound() {
        return RdmaTestEnv.scaled(options().keepalive().multipliedBy(3).dividedBy(2)
                .plus(retryTime().multipliedBy(2)).plus(Duration.ofSeconds(3)));
    }

    /** The longest a connect attempt takes by its own step timeouts: address, route and connect. */
    static Duration attemptBound() {
        ConnectionOptions o = options();
        return o.timeout(Step.ADDRESS).plus(o.timeout(Step.ROUTE)).plus(o.timeout(Step.CONNECT));
    }

    /** How long a stream may wait with neither an echo nor a failure: well past the detection bound. */
    static Duration hangBound() {
        return detectBound().plus(RdmaTestEnv.scaled(Duration.ofSeconds(30)));
    }

    @Test
    @Timeout(value = 12, unit = TimeUnit.HOURS) // a cap only: the run's own bound is below, from its length
    void chaos() throws Exception {
        long seed = seed();
        boolean soak = "soak".equals(System.getenv("RDMAFLUX_CHAOS_MODE"));
        Duration length = Duration.ofSeconds(Long.parseLong(setting("RDMAFLUX_CHAOS_SECONDS", "30")));
        System.out.println("chaos: seed " + seed + " (repeat with RDMAFLUX_CHAOS_SEED=" + seed + "), "
                + (soak ? "soak" : "faults") + " for " + length.toSeconds() + " s");
        SandboxHosts.require(soak ? 2 : 3);
        assertTrue(attemptBound().compareTo(hangBound()) < 0, "a connect's own steps (" + attemptBound()
                + ") end before the stream's hang bound (" + hangBound() + ")");
        Duration bound = RdmaTestEnv.scaled(length.multipliedBy(2).plus(Duration.ofMinutes(15)));
        assertTimeoutPreemptively(bound, () -> run(seed, soak, length), "the chaos run with seed " + seed);
    }

    private void run(long seed, boolean soak, Duration length) throws Exception {
        int hosts = SandboxHosts.count();
        Path reports = reports();
        Path stop = Path.of(System.getenv("RDMAFLUX_HOSTS_DIR"), "chaos-stop-" + ProcessHandle.current().pid());
        ChaosLedger ledger = new ChaosLedger(detectBound().toMillis(), attemptBound().toMillis(),
                retryTime().toMillis());
        ChaosPeers peers = new ChaosPeers(hosts, GROUP, stop, ledger);
        ChaosSchedule schedule = soak ? new ChaosSchedule(seed, List.of())
                : ChaosSchedule.draw(seed, length, hosts, LONG_CUT);
        System.out.println("chaos: schedule " + schedule.faults());
        long started = System.currentTimeMillis();
        try (ProcessSampler sampler = ProcessSampler.start(reports.resolve("chaos-host1.tsv"),
                Duration.ofMillis(Math.max(2_000, length.toMillis() / 400)))) {
            for (int h = 2; h <= hosts; h++) {
                peers.start(h);
            }
            // This JVM warms up while the peers start (a JVM's first connection costs tens of seconds under
            // emulation): a connection to a server of its own, as each peer does, before the baselines.
            Resources.sharedDomain();
            RdmaServer warm = HostsPeerMain.serve(0);
            ChaosPeer.echoOnce(warm.address(), STARTUP);
            warm.disposeNow(STARTUP);
            Map<String, Integer> kernel = Resources.baseline();
            ProcessSample baseline = ProcessSample.settled(null, Duration.ofSeconds(60));
            sampler.append(baseline);
            for (int h = 2; h <= hosts; h++) {
                peers.awaitReady(h, STARTUP);
            }

            MulticastSender sender = RdmaMulticast.sender(GROUP, MulticastOptions.builder()
                    .localAddress(SandboxHosts.address(1)).joinTimeout(CrossHostsIT.JOIN).build())
                    .block(CrossHostsIT.JOIN);
            AtomicLong sent = new AtomicLong();
            // A scheduler of its own, whose thread ends with the run (Reactor's shared ones stay).
            Scheduler pace = Schedulers.newSingle("chaos-multicast");
            Disposable multicast = Flux.interval(Duration.ofMillis(100), pace).onBackpressureDrop()
                    .concatMap(i -> sender.send(MulticastTestSupport.payload(i.intValue(), DATAGRAM))
                            .doOnSuccess(v -> sent.incrementAndGet()))
                    .subscribe(null, e -> ledger.violation("the multicast sender failed: " + e));
            peers.go();
            List<ChaosStream> streams = new ArrayList<>();
            for (int h = 2; h <= hosts; h++) {
                for (int i = 0; i < STREAMS_PER_PAIR; i++) {
                    streams.add(new ChaosStream("h1h" + h + "s" + i, 1, h, new InetSocketAddress(
                            SandboxHosts.address(h), ChaosPeers.PORT), options(), hangBound(), seed + 100L * h + i,
                            ledger).start());
                }
            }
            List<ProcessSample> running = List.of();
            ChaosFaults faults = new ChaosFaults(schedule, ledger, peers, STARTUP,
                    detectBound().plus(Duration.ofSeconds(2)), QUIET);
            try {
                long t0 = System.currentTimeMillis();
                faults.start(t0, length);
                while (!faults.done() || System.currentTimeMillis() - t0 < length.toMillis()) {
                    watch(peers, ledger, seed);
                }
                System.out.println("chaos: every fault recovered after " + (System.currentTimeMillis() - t0) / 1000
                        + " s: " + faults.injected());
                awaitResumed(streams, peers, ledger, seed);
                // Judged over the run: the teardown's samples may catch its own short-lived threads and descriptors.
                running = sampler.samples();
            } finally {
                faults.abort();
                multicast.dispose();
                pace.dispose();
                streams.forEach(ChaosStream::stop);
                for (ChaosStream s : streams) {
                    if (!s.join(hangBound())) {
                        ledger.violation(s + " did not stop within " + hangBound());
                    }
                }
                sender.dispose();
                sender.onDispose().block(CrossHostsIT.JOIN);
            }
            Map<Integer, String> verdicts = peers.settle(RdmaTestEnv.scaled(Duration.ofSeconds(180)));
            Resources.awaitBaseline(kernel, RdmaTestEnv.scaled(Duration.ofSeconds(60)), "host 1 after the chaos run");
            ProcessSample end = ProcessSample.settled(baseline, RdmaTestEnv.scaled(Duration.ofSeconds(90)));
            sampler.append(end);
            String summary = summary(seed, soak, started, faults, streams, peers, sent.get(), ledger);
            System.out.println(summary);
            Files.writeString(reports.resolve("chaos-summary.txt"), summary);
            assertEquals(List.of(), ledger.violations(), "seed " + seed);
            verdicts.forEach((h, v) -> assertEquals("SETTLED", v, "host " + h + " after the run (seed " + seed + ")"));
            assertEquals("", end.differenceFrom(baseline), "host 1 back at its baseline; threads now "
                    + ProcessSample.threadNames());
            assertTrue(soak || ledger.overlaps() > 0, "faults of different hosts overlapped: " + ledger.windows());
            if (length.toMinutes() >= 10) {
                assertEquals("", ProcessSampler.growth(running),
                        "memory, threads and descriptors flat while the streams ran");
            }
        } finally {
            peers.close();
        }
    }

    /** A second of judging: the peers' output, the detection bounds, and a quick failure on a violation. */
    private static void watch(ChaosPeers peers, ChaosLedger ledger, long seed) throws InterruptedException {
        Thread.sleep(1_000);
        peers.poll();
        ledger.checkDetection(System.currentTimeMillis());
        if (!ledger.violations().isEmpty()) {
            // A connect that timed out resolving an address with no fault to explain it: whether this host's
            // ARP entry for the peer failed or never started says where the time went.
            System.out.println("chaos: host 1's neighbours and links at the violation:\n" + networkState());
            throw new AssertionError("chaos run with seed " + seed + " broke an invariant: " + ledger.violations());
        }
    }

    /** {@return this host's neighbour table and link counters ({@code ip}), or why they could not be read} */
    private static String networkState() {
        StringBuilder out = new StringBuilder();
        for (String[] args : List.of(new String[] {"-s", "neigh", "show"}, new String[] {"-s", "link", "show"})) {
            try {
                IpCommand.Result r = IpCommand.run(args);
                out.append("$ ").append(r.command()).append('\n').append(r.output());
            } catch (java.io.IOException e) {
                out.append("ip ").append(String.join(" ", args)).append(": ").append(e).append('\n');
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return out.toString();
    }

    /** Every stream of every host checks new messages, and every peer gets new datagrams, after the faults. */
    private static void awaitResumed(List<ChaosStream> streams, ChaosPeers peers, ChaosLedger ledger, long seed)
            throws InterruptedException {
        peers.poll();
        Map<ChaosStream, Long> local = new HashMap<>();
        streams.forEach(s -> local.put(s, s.messages.get()));
        Map<Integer, Map<String, Long>> remote = new HashMap<>();
        Map<Integer, Map<String, Long>> reported = peers.progress();
        int hosts = SandboxHosts.count();
        for (int h = 2; h <= hosts; h++) {
            // What each peer must report, from the keys of a peer that restarted and has not reported yet too.
            Map<String, Long> m = new HashMap<>(Map.of("mcast", 0L));
            for (int to = h + 1; to <= hosts; to++) {
                for (int i = 0; i < STREAMS_PER_PAIR; i++) {
                    m.put("h" + h + "h" + to + "s" + i, 0L);
                }
            }
            m.putAll(reported.getOrDefault(h, Map.of()));
            remote.put(h, m);
        }
        long deadline = System.currentTimeMillis() + RdmaTestEnv.scaled(Duration.ofSeconds(120)).toMillis();
        while (true) {
            List<String> waiting = new ArrayList<>();
            local.forEach((s, n) -> {
                if (s.messages.get() < n + 2 * ChaosStream.WINDOW) {
                    waiting.add(s.toString());
                }
            });
            Map<Integer, Map<String, Long>> now = peers.progress();
            remote.forEach((h, m) -> m.forEach((k, n) -> {
                if (now.getOrDefault(h, Map.of()).getOrDefault(k, 0L) <= n) {
                    waiting.add("h" + h + ":" + k + "=" + n);
                }
            }));
            if (waiting.isEmpty()) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("did not resume after the faults (seed " + seed + "): " + waiting);
            }
            watch(peers, ledger, seed);
        }
    }

    private static String summary(long seed, boolean soak, long started, ChaosFaults faults, List<ChaosStream> streams,
                                  ChaosPeers peers, long datagrams, ChaosLedger ledger) {
        long messages = streams.stream().mapToLong(s -> s.messages.get()).sum();
        long writes = streams.stream().mapToLong(s -> s.writes.get()).sum();
        long connections = streams.stream().mapToLong(s -> s.connections.get()).sum();
        return "chaos-summary: seed=" + seed + " mode=" + (soak ? "soak" : "faults") + " seconds="
                + (System.currentTimeMillis() - started) / 1000 + " faults=" + faults.injected()
                + " left-out=" + faults.skipped()
                + " messages=" + messages + " writes=" + writes + " connections=" + connections
                + " datagrams-sent=" + datagrams + " peer-progress=" + peers.progress()
                + " overlapping-faults=" + ledger.overlaps() + " failures=" + ledger.failures() + " streams=" + streams;
    }

    private static long seed() {
        String s = setting("RDMAFLUX_CHAOS_SEED", null);
        return s == null ? System.nanoTime() : Long.parseLong(s);
    }

    /** A system property ({@code rdmaflux.chaos.seed} for RDMAFLUX_CHAOS_SEED), else the environment. */
    private static String setting(String env, String fallback) {
        String p = System.getProperty(env.toLowerCase(java.util.Locale.ROOT).replace("rdmaflux_chaos_",
                "rdmaflux.chaos."));
        String v = p != null ? p : System.getenv(env);
        return v == null || v.isBlank() ? fallback : v.trim();
    }

    private static Path reports() throws java.io.IOException {
        String progress = System.getenv("RDMAFLUX_IT_PROGRESS");
        Path dir = progress != null ? Path.of(progress).getParent() : Path.of("target");
        Files.createDirectories(dir);
        return dir;
    }

    private static InetAddress address(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (java.net.UnknownHostException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
