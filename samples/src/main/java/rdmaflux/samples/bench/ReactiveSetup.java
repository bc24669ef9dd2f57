package rdmaflux.samples.bench;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaRetry;
import rdmaflux.cm.RdmaServer;

/**
 * Connection setup through the reactive API, for comparison with {@code cmtime -c N}: N
 * {@link RdmaConnection#connect} subscribed at once (cmtime, too, issues each step for all its connections
 * before waiting), to an {@link RdmaServer} in a JVM of its own ({@link SetupServer}) whose accept queue
 * holds all N, as cmtime's server is a process of its own that listens for all of them. The time runs
 * from the first subscription to the last connection established (both sides: a client's connect
 * completes when its hello exchange is done), the work cmtime's create id … connect steps do plus the
 * library's own (its hello message, registrations, a receive ring per connection). Closing them is not
 * timed; it runs after, and the run waits until every connection is gone so the next run starts from
 * nothing.
 */
final class ReactiveSetup {
    private ReactiveSetup() {
    }

    /**
     * What one run measured.
     *
     * @param connections how many were set up
     * @param seconds first subscription to the last one established
     * @param retries connects that failed with a retryable error and were tried again
     * @param profile the run's line: time, collections, CPU per thread group, step totals
     * @param compiled whether the two JVMs' JITs compiled for 10 % or more of the run ({@link Warmup#jitBusy})
     * @param serverJit the server JVM's compiler threads' CPU seconds during the run
     */
    record Result(int connections, double seconds, int retries, String profile, boolean compiled, double serverJit) {
        /** {@return connections per second} */
        double rate() {
            return connections / seconds;
        }
    }

    /** {@return the collections and the milliseconds of collection so far, all collectors} */
    private static long[] gc() {
        long[] countAndMillis = new long[2];
        for (java.lang.management.GarbageCollectorMXBean b : java.lang.management.ManagementFactory
                .getGarbageCollectorMXBeans()) {
            countAndMillis[0] += Math.max(0, b.getCollectionCount());
            countAndMillis[1] += Math.max(0, b.getCollectionTime());
        }
        return countAndMillis;
    }

    /**
     * Sets up {@code connections} connections at once to {@code server}, then closes them all.
     *
     * @param server the server JVM, whose accept queue holds {@code connections}
     * @param connections how many
     * @param timeout the longest the setup, and the teardown, may take
     * @return the time and the retries
     */
    static Result run(SetupServerProcess server, int connections, Duration timeout) {
        return run(server, connections, timeout, clients -> { });
    }

    /**
     * Sets up {@code connections} connections at once to {@code server}, hands them to {@code whileOpen}
     * (untimed), then closes them all.
     *
     * @param server the server JVM, whose accept queue holds {@code connections}
     * @param connections how many
     * @param timeout the longest the setup, and the teardown, may take
     * @param whileOpen what to do with the connections once the time is taken, before they close
     * @return the time and the retries
     */
    static Result run(SetupServerProcess server, int connections, Duration timeout,
                      java.util.function.Consumer<List<RdmaConnection>> whileOpen) {
        StepTotals clientSteps = new StepTotals();
        ConnectionOptions options = SetupOptions.options().toBuilder().recorder(clientSteps).build();
        List<RdmaConnection> clients = List.of();
        AtomicInteger retries = new AtomicInteger();
        InetSocketAddress target = server.address();
        try {
            server.mark();
            // Each cmtime run is a new process. Each of ours starts, like it, without the garbage the runs before
            // left (their setups and untimed teardowns): a collection in the timed part is then one that this
            // run's own allocation needs.
            System.gc();
            ThreadCpu cpu0 = ThreadCpu.snapshot();
            long[] gc0 = gc();
            long t0 = System.nanoTime();
            // Mono.zip, not flatMap(…, N): flatMap's drain scans all its inner subscribers each time one
            // completes, which at 10,000 took the signal threads most of the run (JFR); zip counts.
            List<Mono<RdmaConnection>> connects = new ArrayList<>(connections);
            for (int i = 0; i < connections; i++) {
                connects.add(RdmaConnection.connect(target, options)
                        .doOnError(e -> retries.incrementAndGet())
                        .retryWhen(RdmaRetry.reconnect(20, Duration.ofMillis(200))));
            }
            clients = Mono.zip(connects, all -> Arrays.stream(all).map(RdmaConnection.class::cast).toList())
                    .block(timeout);
            long t1 = System.nanoTime();
            ThreadCpu cpu1 = ThreadCpu.snapshot();
            long[] gc1 = gc();
            SetupServerProcess.Report s = server.report();
            String profile = String.format(java.util.Locale.ROOT, "%.2f s; client GC %d collections, %d ms; "
                    + "CPU s: client process %.2f, client cm loop %.2f (user %.2f), client completion loops %.2f, "
                    + "client signal threads %.2f, client JIT %.2f, %s; client steps: %s",
                    (t1 - t0) / 1e9, gc1[0] - gc0[0], gc1[1] - gc0[1], cpu1.processSince(cpu0),
                    cpu1.groupSince(cpu0, "rdmaflux-cm"), cpu1.groupUserSince(cpu0, "rdmaflux-cm"),
                    cpu1.groupSince(cpu0, "rdmaflux-completion"), cpu1.groupSince(cpu0, "rdmaflux-signal"),
                    cpu1.jitSince(cpu0), s.profile(), clientSteps.describe());
            whileOpen.accept(clients);
            // Both JVMs' compilers share the CPUs with the CM loops.
            return new Result(connections, (t1 - t0) / 1e9, retries.get(), profile,
                    Warmup.jitBusy(cpu1.jitSince(cpu0) + s.jitSeconds(), (t1 - t0) / 1e9), s.jitSeconds());
        } finally {
            Flux.fromIterable(clients).flatMap(c -> {
                c.dispose();
                return c.onDispose();
            }).then().block(timeout);
            server.closeAccepted();
        }
    }

    /**
     * Untimed rounds of {@code conns} connections until one leaves the JIT nearly idle (compilation under
     * 5% of the round's time), at most {@code maxRounds}, then the wait for a quiet JIT: the verbs setup
     * row's rule. Each connection runs the setup path once per side, so a single round leaves most of it
     * interpreted or queued for the compiler, and the timed run would measure the compiler threads, which
     * share the CPUs with the CM loops, more than the steady state cmtime (native code) is compared with.
     *
     * @param server the server JVM
     * @param conns connections per round
     * @param maxRounds the most rounds
     * @param longer the longest a round may take
     * @param awaitJitQuiet waits until this JVM's JIT is idle
     * @return how many rounds ran
     */
    static int warmUp(SetupServerProcess server, int conns, int maxRounds, Duration longer, Runnable awaitJitQuiet) {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        boolean monitored = jit != null && jit.isCompilationTimeMonitoringSupported();
        java.lang.management.ClassLoadingMXBean classes = java.lang.management.ManagementFactory.getClassLoadingMXBean();
        int rounds = 0;
        while (rounds < maxRounds) {
            long compiled = monitored ? jit.getTotalCompilationTime() : 0;
            long loaded = classes.getTotalLoadedClassCount();
            long t0 = System.nanoTime();
            Result r = run(server, conns, longer);
            rounds++;
            double wallMs = (System.nanoTime() - t0) / 1e6;
            // The server JVM's compiler shares the CPUs too: its CPU time counts with this JVM's compilations.
            long compiling = monitored ? jit.getTotalCompilationTime() - compiled + Math.round(r.serverJit() * 1000)
                    : -1;
            // Classes loaded per round: code generated per connection (lambda forms, hidden classes) would keep
            // the JIT busy however long the warm-up.
            System.out.printf(java.util.Locale.ROOT, "bench:   reactive setup warm-up %d: %.1f conn/s, JIT %d ms of %.0f ms, "
                    + "%d classes loaded%n", rounds, r.rate(), compiling, wallMs,
                    classes.getTotalLoadedClassCount() - loaded);
            if (!monitored || compiling < 0.05 * wallMs) {
                break;
            }
        }
        awaitJitQuiet.run();
        server.quiet();
        return rounds;
    }

    /**
     * {@return cmtime's side of a setup comparison: {@code cmtime -c conns}, a new pair of processes each run}
     *
     * @param c the C tools
     * @param conns connections per run
     * @param say prints each run's line
     * @param timeout the longest one cmtime client run may take
     */
    static Comparison.Side cmtimeSide(CTools c, int conns, java.util.function.Consumer<String> say, Duration timeout) {
        int[] run = {0};
        return new Comparison.Side("cmtime", false, warm -> {
            StringBuilder error = new StringBuilder();
            java.util.Map<ConnectionRate.Step, Double> cm = c.cmtime(conns, error, timeout);
            if (!error.isEmpty()) {
                throw new IllegalStateException(error.toString());
            }
            double rate = new ConnectionRate.Result(conns, cm).setupRate();
            say.accept(String.format(java.util.Locale.ROOT, "bench:   cmtime run %d of %d connections: %.1f conn/s, "
                    + "step totals ms: %s", ++run[0], conns, rate, cm));
            return new Comparison.Measured(rate, Double.NaN);
        });
    }

    /** {@return the runs of a setup comparison in which ours failed before its first run: the row fails} */
    static Comparison.Runs failedBeforeFirst(List<String> errors) {
        return new Comparison.Runs(List.of("ours", "cmtime"), List.of(List.of(), List.of()),
                List.of(List.copyOf(errors), List.of()), List.of());
    }
}
