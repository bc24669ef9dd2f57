package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The connection setup rows of the verbs layer's CM path ({@link ConnectionRate}) against
 * {@code cmtime}: the rate and each step's total, from the median run.
 */
final class SetupRows {
    /** Connection setup target: at least 0.8 × cmtime's rate. */
    static final Row.Target TARGET = Row.Target.ratioAtLeast(0.8);
    private final InetAddress ip;
    private final int basePort;
    private final int repeat;
    private final Duration timeout;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param basePort the first of the ports its runs take
     * @param repeat runs of each side
     * @param timeout the longest wait for any step
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until the JIT has gone quiet
     */
    SetupRows(InetAddress ip, int basePort, int repeat, Duration timeout, Consumer<Row> progress,
              Runnable awaitJitQuiet) {
        this.ip = ip;
        this.basePort = basePort;
        this.repeat = repeat;
        this.timeout = timeout;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * {@return the rate row and the step rows}
     *
     * @param conns connections per run
     * @param c the C tools
     */
    List<Row> rows(int conns, CTools c) throws InterruptedException {
        List<Row> rows = new ArrayList<>();
        List<ConnectionRate.Result> ours = new ArrayList<>();
        List<ConnectionRate.Result> theirs = new ArrayList<>();
        int warmRounds = 0;
        String warmError = null;
        try {
            warmRounds = warmUp(conns);
        } catch (RuntimeException e) {
            warmError = "ours failed: " + e.getMessage();
        }
        int[] run = {0};
        // Both sides cold, a quiet JIT before every run of either, alternating, no run measured again.
        Comparison.Runs runs = warmError != null ? failedRuns(warmError) : Comparison.run(
                new Comparison.Rules(repeat, 0, awaitJitQuiet), List.of(
                Comparison.Side.ours("ours", warm -> {
                    ConnectionRate.Result o;
                    try {
                        o = ConnectionRate.run(new InetSocketAddress(ip, basePort + 2 + run[0]++), conns, timeout);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted", e);
                    }
                    ours.add(o);
                    return new Comparison.Measured(o.setupRate(), Double.NaN);
                }),
                new Comparison.Side("cmtime", false, warm -> {
                    StringBuilder error = new StringBuilder();
                    Map<ConnectionRate.Step, Double> cm = c.cmtime(conns, error);
                    if (!error.isEmpty()) {
                        throw new IllegalStateException(error.toString());
                    }
                    ConnectionRate.Result t = new ConnectionRate.Result(conns, cm);
                    theirs.add(t);
                    return new Comparison.Measured(t.setupRate(), Double.NaN);
                })));
        if (!runs.errors().getFirst().isEmpty()) {
            failed = true;
        }
        ConnectionRate.Result o = medianRun(ours);
        ConnectionRate.Result t = medianRun(theirs);
        Row rate = Comparison.row("connection setup rate", 0, "conn/s", "cmtime", TARGET, runs, 1, Stats::median,
                conns + " connections; create id..connect; ours after " + warmRounds + " untimed rounds "
                + "(the JIT's warm-up)", "C", repeat);
        progress.accept(rate);
        rows.add(rate);
        for (ConnectionRate.Step s : ConnectionRate.Step.values()) {
            rows.add(new Row("setup step: " + s.label + " (total)", 0, "ms",
                    o == null ? Double.NaN : o.totalMillis().getOrDefault(s, Double.NaN),
                    t == null ? Double.NaN : t.totalMillis().getOrDefault(s, Double.NaN), "cmtime", Row.Target.NONE,
                    Double.NaN, "from the median run"));
        }
        return rows;
    }

    /**
     * Untimed setup rounds until one leaves the JIT nearly idle (compilation under 5% of the round's time),
     * at most 8, then waits for the JIT to go quiet. Connection setup makes each CM call a few times per
     * connection, so a single round leaves most of that path interpreted or queued for the compiler, and
     * the timed rounds would measure the compiler threads, which share the CPUs, more than the steady state
     * that cmtime (native code) is compared with; the latency rows wait for the JIT the same way.
     *
     * @return how many rounds ran
     */
    private int warmUp(int conns) throws InterruptedException {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean monitored = jit != null && jit.isCompilationTimeMonitoringSupported();
        int rounds = 0;
        while (rounds < 8) {
            long compiled = monitored ? jit.getTotalCompilationTime() : 0;
            long t0 = System.nanoTime();
            ConnectionRate.run(new InetSocketAddress(ip, basePort + 50 + rounds), conns, timeout);
            rounds++;
            double wallMs = (System.nanoTime() - t0) / 1e6;
            if (!monitored || jit.getTotalCompilationTime() - compiled < 0.05 * wallMs) {
                break;
            }
        }
        awaitJitQuiet.run();
        return rounds;
    }

    /** {@return runs in which ours failed before its first: the row fails} */
    private Comparison.Runs failedRuns(String error) {
        failed = true;
        return new Comparison.Runs(List.of("ours", "cmtime"), List.of(List.of(), List.of()),
                List.of(List.of(error), List.of()), List.of());
    }

    /** {@return the run with the median setup rate (its step times are shown), or null} */
    private static ConnectionRate.Result medianRun(List<ConnectionRate.Result> runs) {
        if (runs.isEmpty()) {
            return null;
        }
        List<ConnectionRate.Result> sorted = runs.stream()
                .sorted(java.util.Comparator.comparingDouble(ConnectionRate.Result::setupRate)).toList();
        return sorted.get(sorted.size() / 2);
    }
}
