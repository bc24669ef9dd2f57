package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The reactive API's latency and setup rows: its ping-pong with the default options (for the record), its
 * ping-pong with busy polling against the verbs spin ping-pong, and its connection setup against
 * {@code cmtime}. Each row is the median of {@code repeat} runs (the setup row: at least {@value #SETUP_RUNS}
 * in a full run), with the CPU column where it applies.
 *
 * <p>Threads: the benchmark's thread only.
 */
final class ReactiveRows {
    /** The metric of the reactive busy-poll ping-pong row. */
    static final String BUSY_POLL_METRIC = "reactive send/recv latency p50, busy-poll";
    /** Its target: p50 at most 1.3 × the verbs layer's spin ping-pong (spin hint) of the same run. */
    static final Row.Target BUSY_POLL_TARGET = Row.Target.ratioAtMost(1.3);
    /**
     * The most untimed rounds of the reactive setup row. Under emulation C2 spends 5-10 s on each of the
     * largest setup methods (a queue's constructors, creating a queue pair): those compilations were still
     * running in the seventh round of 1,000 connections, and the tenth still compiled for 14% of its time.
     */
    static final int SETUP_WARMUP_ROUNDS = 15;
    /**
     * The fewest timed runs of the setup row, each side, in a full run: single runs of 1,000 connections
     * moved between 164 and 465 conn/s for {@code cmtime} and between 264 and 408 for ours within one run
     * (2026-11-27), so a median of three can rest on one side's outlier.
     */
    static final int SETUP_RUNS = 5;
    /** The busy-poll row's JVMs in a full run ({@link BusyPollFork}): JMH's default number of forks. */
    static final int BUSY_POLL_FORKS = 5;
    /**
     * Timed round trips per run of the busy-poll row (a quick run's: a fifth), whatever {@code --lat-iters}
     * says: the latency rows' 300 take 9 ms here, two or three of the emulator's 4 ms ticks.
     */
    static final int BUSY_POLL_ITERS = 5000;
    private final InetAddress ip;
    private final boolean quick;
    private final int repeat;
    private final Duration timeout;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> say;
    private final boolean pin;
    /** Whether the verbs ping-pong's two threads go to CPUs 0 and 1, as the latency rows' do. */
    private final boolean pinThreads;
    private boolean ourFailure;

    /**
     * @param ip the RDMA interface's address
     * @param quick the short run: no untimed warm-up rounds
     * @param repeat timed runs per row
     * @param timeout the longest wait for any step
     * @param progress told each finished row
     * @param awaitJitQuiet waits until the JIT is idle
     * @param say prints a line
     * @param pin run the setup row's server JVM on CPU 1, as the C tools' servers, and the busy-poll row's
     *            verbs ping-pong on CPUs 0 and 1, as the latency rows
     */
    ReactiveRows(InetAddress ip, boolean quick, int repeat, Duration timeout, Consumer<Row> progress,
                 Runnable awaitJitQuiet, Consumer<String> say, boolean pin) {
        this.ip = ip;
        this.quick = quick;
        this.repeat = repeat;
        this.timeout = timeout;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.say = say;
        this.pin = pin && CTools.installed("taskset");
        this.pinThreads = pin;
    }

    /** {@return whether one of our runs failed} */
    boolean failed() {
        return ourFailure;
    }

    /** The reactive API's ping-pong (default options) against ib_send_lat's p50 of this run, for the record. */
    Row pingPongRow(int iters, int warm, double cSendLat) {
        String note = "rdmaflux.cm RdmaConnection + in-process echo RdmaServer, default options; alloc = all threads";
        PingPongRuns runs = new PingPongRuns();
        try {
            runs.run(repeat, () -> ReactiveLatency.run(new InetSocketAddress(ip, 0), 2, warm * 2, iters, timeout));
        } catch (RuntimeException e) {
            ourFailure = true;
            note = "ours failed: " + e;
        }
        if (repeat > 1 && !runs.micros.isEmpty()) {
            note += "; median of " + repeat + ": " + Stats.range(runs.micros);
        }
        Row row = new Row("reactive send/recv latency p50", 2, "us", Stats.median(runs.micros), cSendLat, "ib_send_lat",
                Row.Target.NONE, runs.alloc, note).withCpu(Stats.median(runs.cpu), Double.NaN);
        progress.accept(row);
        return row;
    }

    /** Timed ping-pong runs: each one's typical latency and CPU per message, the largest heap per message. */
    private static final class PingPongRuns {
        final List<Double> micros = new ArrayList<>();
        final List<Double> cpu = new ArrayList<>();
        double alloc = Double.NaN;

        /** Runs {@code pingPong} {@code times} times; the CPU column is taken around each. */
        void run(int times, Supplier<VerbsTests.Latency> pingPong) {
            for (int r = 0; r < times; r++) {
                VerbsTests.Latency l = pingPong.get();
                double perMessage = CpuTime.take(l.messages());
                if (!Double.isNaN(perMessage)) {
                    cpu.add(perMessage);
                }
                micros.add(Stats.typicalMicros(l.stamps(), 2));
                alloc = Double.isNaN(alloc) ? l.allocPerMessage() : Math.max(alloc, l.allocPerMessage());
            }
        }
    }

    /**
     * The reactive ping-pong with busy polling ({@link ReactiveBusyPoll}) against the verbs layer's spin
     * ping-pong (both loops with the spin-wait hint), target {@link #BUSY_POLL_TARGET}: {@link #BUSY_POLL_FORKS}
     * JVMs of their own in a full run, one in a quick run ({@link BusyPollFork}), each warming up both sides and
     * timing {@code repeat} runs of each in turn ({@link ReactiveBusyPoll#measure}); the medians of all forks'
     * runs, and each fork's ratio in the note.
     *
     * @param port the verbs link's port
     * @return the row
     */
    Row busyPollRow(int port) {
        int forks = quick ? 1 : BUSY_POLL_FORKS;
        int iters = quick ? BUSY_POLL_ITERS / 5 : BUSY_POLL_ITERS;
        int warm = iters / 5;
        List<String> perFork = new ArrayList<>();
        String note = "rdmaflux.cm RdmaConnection + in-process echo RdmaServer, busyPoll(" + ReactiveBusyPoll.SPIN
                + ") and scheduler(Schedulers.immediate()) on both (signals and the echo on the completion loop), "
                + "calling thread spinning with Thread.onSpinWait(); one connection for the warm-up (until the JIT "
                + "is done) and the timed runs; C = the verbs layer's SEND ping-pong with Thread.onSpinWait() in "
                + "its poll loops (the fair baseline under TCG: ib_send_lat's loops have no hint and wait a timer "
                + "tick a hop), warmed up the same way, its runs and ours in turn; "
                + (forks == 1 ? "1 JVM of its own" : forks + " JVMs of their own (forks, as JMH's)") + " with "
                + repeat + (repeat == 1 ? " run of " : " runs of ") + iters + " round trips (each after " + warm
                + " untimed, both sides) of each side; medians of all runs, interval over forks and runs; "
                + "alloc = all threads";
        List<String> errors = new ArrayList<>();
        Comparison.Runs runs = Comparison.forks(List.of("ours", "verbs"), forks, f -> {
            say.accept("bench: busy-poll fork " + (f + 1) + " of " + forks);
            List<ReactiveBusyPoll.Run> fork = BusyPollFork.run(ip, port, iters, warm, repeat, quick, pinThreads,
                    timeout, say);
            List<Comparison.Measured> ours = new ArrayList<>();
            List<Comparison.Measured> verbs = new ArrayList<>();
            for (ReactiveBusyPoll.Run r : fork) {
                ours.add(new Comparison.Measured(r.ours(), r.alloc(), r.oursCpu()));
                verbs.add(new Comparison.Measured(r.verbs(), Double.NaN, r.verbsCpu()));
            }
            List<Double> o = ours.stream().map(Comparison.Measured::value).toList();
            List<Double> v = verbs.stream().map(Comparison.Measured::value).toList();
            perFork.add(String.format(java.util.Locale.ROOT, "%.3f", Stats.median(o) / Stats.median(v)));
            say.accept("bench: busy-poll fork " + (f + 1) + ": ours " + Stats.range(o) + " us, verbs "
                    + Stats.range(v) + " us, ratio of medians " + perFork.getLast());
            return new Comparison.Runs(List.of("ours", "verbs"), List.of(ours, verbs), List.of(List.of(), List.of()),
                    java.util.Collections.nCopies(fork.size(), f));
        }, errors::add);
        if (!errors.isEmpty()) {
            ourFailure = true;
            note += "; " + String.join("; ", errors);
        }
        if (!perFork.isEmpty()) {
            note += "; each fork's ratio " + String.join(", ", perFork);
        }
        Row row = Comparison.row(BUSY_POLL_METRIC, 2, "us", "verbs spin ping-pong", BUSY_POLL_TARGET, runs, 1,
                Stats::median, note, "verbs", repeat * forks);
        progress.accept(row);
        return row;
    }


    /**
     * Connection setup through the reactive API ({@link ReactiveSetup}: N {@code RdmaConnection.connect}
     * at once) against {@code cmtime -c N} in the same run, alternating, medians; target as the verbs setup
     * row. Untimed rounds of the same N, at most {@value #SETUP_WARMUP_ROUNDS}, warm the JIT first
     * ({@link ReactiveSetup#warmUp}; not in a quick run): code that runs once per connection and side reaches C2
     * only after a few thousand connections (HotSpot's tier-4 threshold is 5,000 invocations), more than
     * a few rounds of 100 give it. The server runs in a second JVM ({@link SetupServer}) for the whole row,
     * as cmtime's server is a second process.
     */
    Row setupRow(int conns, CTools c) {
        List<String> errors = new ArrayList<>();
        int[] retries = {0};
        int warmups = 0;
        Duration longer = timeout.multipliedBy(5);
        SetupServerProcess server = null;
        try {
            // The benchmark's own wait for a quiet JIT: 5 s in a quick run, 30 s otherwise.
            server = new SetupServerProcess(ip, conns, longer, Duration.ofSeconds(quick ? 5 : 30), pin);
            if (!quick) { // the quick run stays short and checks that the row works
                warmups = ReactiveSetup.warmUp(server, conns, SETUP_WARMUP_ROUNDS, longer, awaitJitQuiet);
            }
        } catch (RuntimeException e) {
            ourFailure = true;
            errors.add("ours failed: " + e.getMessage());
        }
        int runs = quick ? repeat : Math.max(repeat, SETUP_RUNS);
        Comparison.Runs measured;
        try {
            SetupServerProcess s = server;
            int[] run = {0};
            // The same wait before every run of either side: both JVMs' JITs idle, the server JVM collected. No
            // run of either side is measured again, whatever the JIT did during it.
            Runnable settle = () -> {
                awaitJitQuiet.run();
                s.quiet();
            };
            measured = !errors.isEmpty() ? ReactiveSetup.failedBeforeFirst(errors) : Comparison.run(new Comparison.Rules(runs, 0, settle), List.of(
                    Comparison.Side.ours("ours", warm -> {
                        ReactiveSetup.Result o = ReactiveSetup.run(s, conns, longer);
                        retries[0] += o.retries();
                        System.out.printf(java.util.Locale.ROOT, "bench:   reactive setup run %d: %.1f conn/s, %s%n",
                                ++run[0], o.rate(), o.profile());
                        return new Comparison.Measured(o.rate(), Double.NaN);
                    }),
                    ReactiveSetup.cmtimeSide(c, conns, System.out::println, longer)));
        } finally {
            if (server != null) {
                server.close();
            }
        }
        if (!measured.errors().getFirst().isEmpty()) {
            ourFailure = true;
        }
        String note = conns + " connections at once; RdmaConnection.connect to an RdmaServer in a second JVM"
                + (pin ? " on CPU 1" : "") + " (accept queue " + conns + "), " + SetupOptions.describe()
                + "; first subscribe..last established, vs cmtime create id..connect; " + retries[0]
                + " retried connects"
                + (warmups > 0 ? "; ours after " + warmups + " untimed rounds of " + conns + " (the JIT's warm-up)"
                : "");
        Row row = Comparison.row("connection setup rate, reactive API", 0, "conn/s", "cmtime", SetupRows.TARGET,
                measured, 1, Stats::median, note, "C", runs);
        progress.accept(row);
        return row;
    }
}
