package rdmaflux.samples.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * The client's part of {@link CrossHostBench}: for each latency test and size, ours and perftest's client
 * alternately against a server side the other host starts on request, then the table's rows.
 */
final class CrossHostRows {
    /** Most untimed runs of each verbs-layer test before the rows. */
    static final int VERBS_WARM_RUNS = 10;
    /** Most untimed runs of each reactive mode before its row: a fresh JVM under emulation compiles for long. */
    static final int REACTIVE_WARM_RUNS = 20;

    /** The reactive rows' target (issue #39): p50 at most 1.3 × perftest's. */
    static final Row.Target REACTIVE_TARGET = Row.Target.ratioAtMost(1.3);

    /**
     * How both sides of a reactive row wait for a completion, and where ours handles it: each mode compares ours
     * configured so against {@code ib_send_lat} waiting the same way.
     */
    enum Mode {
        /**
         * Ours busy polling ({@link ReactiveBusyPoll#options}: the completion loop polls the CQ, signals on the
         * loop) against {@code ib_send_lat}, which polls by default.
         */
        BUSY("reactive send/recv latency p50, busy-poll", false, REACTIVE_TARGET,
                "both busy polling, signals on the completion loop"),
        /**
         * Ours sleeping on the completion channel with signals on the completion loop that woke
         * ({@code scheduler(Schedulers.immediate())}, as netty runs handlers on its event loop) against
         * {@code ib_send_lat -e}, which sleeps on CQ events and answers on the thread that woke: one thread of
         * each side runs for a message.
         */
        EVENTS("reactive send/recv latency p50, events", true, REACTIVE_TARGET,
                "both sleep on the completion channel, signals on the completion loop"),
        /**
         * Ours with default options (the completion loop sleeps on the completion channel and hands each
         * message to a signal thread, so that a subscriber that blocks cannot stall the loop) against
         * {@code ib_send_lat -e}: what that hand-off costs a round trip. No target: an application that wants
         * the lowest latency and does not block in its subscribers signals on the loop ({@link #EVENTS}).
         * Full runs only.
         */
        EVENTS_DEFAULT("reactive send/recv latency p50, events, default options", true, Row.Target.NONE,
                "default options: both sleep on the completion channel, signals on the signal threads");

        final String metric;
        final boolean perftestEvents;
        final Row.Target target;
        /** How ours waits and where it signals, for the row's note. */
        final String how;

        Mode(String metric, boolean perftestEvents, Row.Target target, String how) {
            this.metric = metric;
            this.perftestEvents = perftestEvents;
            this.target = target;
            this.how = how;
        }

        /** {@return the connection options of both of ours' sides} */
        rdmaflux.cm.ConnectionOptions options(int size) {
            return switch (this) {
                case BUSY -> ReactiveBusyPoll.options(size);
                case EVENTS -> ReactiveLatency.options(size).toBuilder()
                        .scheduler(reactor.core.scheduler.Schedulers.immediate()).build();
                case EVENTS_DEFAULT -> ReactiveLatency.options(size);
            };
        }

        /** {@return the C tool's name as the table shows it} */
        String tool() {
            return perftestEvents ? "ib_send_lat -e" : "ib_send_lat";
        }

        /** {@return the modes a run measures: a quick one only those with a target} */
        static List<Mode> measured(boolean quick) {
            return java.util.Arrays.stream(values()).filter(m -> !quick || m.target != Row.Target.NONE).toList();
        }
    }

    private final CrossHostControl control;
    private final InetAddress server;
    private final String device;
    private final Duration timeout;
    private final boolean quick;
    private final BiConsumer<String, Object[]> say;
    private final Path work;
    private int nextPort;
    private boolean ourFailure;

    /**
     * @param control the control connection to the server host
     * @param server the server host's RDMA address
     * @param device the RDMA device for perftest's {@code -d}
     * @param basePort first port for the server sides; every run takes a fresh one
     * @param timeout the longest single wait
     * @param quick a short run
     * @param say progress output
     */
    CrossHostRows(CrossHostControl control, InetAddress server, String device, int basePort, Duration timeout,
                  boolean quick, BiConsumer<String, Object[]> say) throws IOException {
        this.control = control;
        this.server = server;
        this.device = device;
        this.nextPort = basePort;
        this.timeout = timeout;
        this.quick = quick;
        this.say = say;
        this.work = Files.createTempDirectory("rdmaflux-bench-hosts");
    }

    /** {@return whether any of our runs failed} */
    boolean ourFailure() {
        return ourFailure;
    }

    /**
     * Every row: the verbs-layer tests at each size, then the reactive ping-pong at 2 B in each {@link Mode}
     * against {@code ib_send_lat} waiting the same way.
     */
    List<Row> all(int[] sizes, int iters, int repeat) throws IOException {
        int warm = quick ? 10 : 30;
        int readWarm = quick ? 200 : 1000;
        List<Row> rows = new ArrayList<>();
        say("bench: warming up the JIT on the cross-host loops");
        for (HostLatency.Test t : HostLatency.Test.values()) {
            try {
                int w = t == HostLatency.Test.READ ? readWarm : 10 * warm;
                warmUp(t.toString(), VERBS_WARM_RUNS, () -> ours(t, 2, w, iters));
            } catch (RuntimeException e) {
                say("bench: warm-up of %s failed: %s", t, e.getMessage());
            }
        }
        for (int size : sizes) {
            for (HostLatency.Test t : HostLatency.Test.values()) {
                rows.add(row(t, size, iters, repeat));
            }
        }
        for (Mode m : Mode.measured(quick)) {
            // Each mode warms up right before its row: the modes' connections drain through different classes
            // (busy polling: a CQ of its own; sleeping: the loop's shared CQ), so the code compiled for one mode
            // is deoptimized by the next mode's first completion (class_check traps in CompletionLoop.drain,
            // RcQueue.drainNow, CqDrain.poll), and warming all modes first left it to be recompiled in the
            // rows' timed runs.
            try {
                warmUp("reactive ping-pong (" + m + ")", REACTIVE_WARM_RUNS, () -> reactive(m, 10 * warm, iters));
            } catch (RuntimeException e) {
                say("bench: warm-up of the reactive ping-pong (%s) failed: %s", m, e.getMessage());
            }
            rows.add(reactiveRow(m, iters, repeat));
        }
        return rows;
    }

    /**
     * One latency row through {@link Comparison#run}: ours and perftest's client in turn, both cold (perftest
     * starts a new process each run, so ours' timed runs have no untimed round trips either), a quiet JIT on both
     * hosts before every run of either.
     */
    private Row row(HostLatency.Test t, int size, int iters, int repeat) {
        int[] jitBusy = {0};
        Comparison.Runs runs = Comparison.run(new Comparison.Rules(repeat, 0, () -> CrossHostJit.awaitQuiet(quick,
                say)), List.of(
                Comparison.Side.ours("ours", w -> {
                    Run run = ours(t, size, w, iters);
                    jitBusy[0] += run.jitBusy() ? 1 : 0;
                    return new Comparison.Measured(Stats.typicalMicros(run.stamps(), t.rttFactor), Double.NaN);
                }),
                new Comparison.Side(t.tool, false, w -> new Comparison.Measured(perftest(t.tool, size, iters, false),
                        Double.NaN))));
        if (!runs.errors().getFirst().isEmpty()) {
            ourFailure = true;
        }
        return finish(Comparison.row(t.metric, size, "us", t.tool, Row.Target.RATIO_AT_MOST, runs, 1, Stats::median,
                jitBusy[0] > 0 ? "a JIT was busy in " + jitBusy[0] + " of ours" : "", "C", repeat));
    }

    /**
     * One reactive row through {@link Comparison#run}: ours (a new echo server and connection each run) and
     * {@code ib_send_lat} (a new process pair each run) in turn, both cold, the same quiet-JIT wait before each.
     */
    private Row reactiveRow(Mode mode, int iters, int repeat) {
        int[] jitBusy = {0};
        Comparison.Runs runs = Comparison.run(new Comparison.Rules(repeat, 0, () -> CrossHostJit.awaitQuiet(quick,
                say)), List.of(
                Comparison.Side.ours("ours", w -> {
                    Run run = reactive(mode, w, iters);
                    jitBusy[0] += run.jitBusy() ? 1 : 0;
                    return new Comparison.Measured(Stats.typicalMicros(run.stamps(), 2), Double.NaN);
                }),
                new Comparison.Side(mode.tool(), false, w -> new Comparison.Measured(perftest("ib_send_lat", 2,
                        iters, mode.perftestEvents), Double.NaN))));
        if (!runs.errors().getFirst().isEmpty()) {
            ourFailure = true;
        }
        String note = "rdmaflux.cm RdmaConnection, echo RdmaServer on the server host; " + mode.how
                + "; the client's subscriber sends each next message"
                + (jitBusy[0] > 0 ? "; a JIT was busy in " + jitBusy[0] + " of ours" : "");
        return finish(Comparison.row(mode.metric, 2, "us", mode.tool(), mode.target, runs, 1, Stats::median,
                note, "C", repeat));
    }

    private Row finish(Row r) {
        say("bench: %-32s %8s  ours %9s  C %9s us ratio %6s  %s%s", r.metric(), Row.sizeText(r.size()),
                Row.fmt(r.ours()), Row.fmt(r.c()), Row.fmt(r.ratio()), r.verdict(),
                r.note().isEmpty() ? "" : "  (" + r.note() + ")");
        return r;
    }

    /**
     * One run of ours.
     *
     * @param stamps {@code iters + 1} timestamps
     * @param serverJitMillis the server JVM's JIT time while it answered the timed rounds
     * @param clientJitMillis this JVM's JIT time during the timed rounds
     * @param wallMillis the timed rounds' wall time here
     */
    private record Run(long[] stamps, long serverJitMillis, long clientJitMillis, double wallMillis) {
        /**
         * Whether either JIT was busy for more than 5 % of the timed rounds (then it shared the VM's one CPU
         * with the loop); what it compiled while the connection was set up does not count.
         */
        boolean jitBusy() {
            return serverJitMillis + clientJitMillis > 0.05 * wallMillis;
        }
    }

    /** One run of ours: the server host answers, this host times. */
    private Run ours(HostLatency.Test t, int size, int warm, int iters) {
        try {
            return oursRun(t, size, warm, iters);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private Run oursRun(HostLatency.Test t, int size, int warm, int iters) throws IOException {
        int port = nextPort++;
        boolean served = t != HostLatency.Test.READ; // a read needs nothing of the server's loop
        control.request("ours " + t + " " + size + " " + (served ? warm : 0) + " " + (served ? iters : 0) + " "
                + port, true);
        long[] stamps;
        long clientJit;
        HostLatency end;
        try {
            end = HostLatency.connect(new InetSocketAddress(server, port), HostLatency.MAX_SIZE, timeout);
        } catch (RuntimeException e) {
            control.answer(); // keep the conversation in step: the server side ends with its own answer
            throw e instanceof HostLatency.Refused ? new Comparison.NothingMeasured("connection refused: "
                    + e.getMessage()) : e;
        }
        try (end) {
            stamps = end.run(t, size, warm, iters);
            clientJit = end.timedJitMillis();
        } catch (RuntimeException e) {
            control.answer();
            throw e;
        }
        double wall = (stamps[iters] - stamps[0]) / 1e6;
        String done = control.answer();
        if (!done.startsWith("done ")) {
            throw new IllegalStateException("server: " + done);
        }
        return new Run(stamps, Long.parseLong(done.substring(5).trim()), clientJit, wall);
    }

    /**
     * Untimed runs until neither JVM's JIT was busy through one's timed rounds (at most {@code max}, quick 3),
     * so the timed runs do not share a VM's one CPU with a compiler thread.
     */
    private void warmUp(String what, int max, java.util.function.Supplier<Run> run) {
        int rounds = quick ? 3 : max;
        for (int round = 1; round <= rounds; round++) {
            Run r = run.get();
            if (!r.jitBusy() || round == rounds) {
                say("bench: %s warm after %d runs (JIT in the last one's timed rounds: server %d ms, client %d ms "
                        + "of %.0f ms)", what, round, r.serverJitMillis(), r.clientJitMillis(), r.wallMillis());
                return;
            }
            CrossHostJit.awaitQuiet(quick, say);
        }
    }

    /** One reactive ping-pong against a new echo server on the server host, driven by its echoes. */
    private Run reactive(Mode mode, int warm, int iters) {
        try {
            int port = nextPort++;
            control.request("reactive 2 " + port + " " + mode + " " + warm + " " + iters, true);
            long[] stamps;
            long clientJit;
            try {
                ReactiveLatency.Client client;
                try {
                    client = new ReactiveLatency.Client(new InetSocketAddress(server, port), mode.options(2),
                            timeout);
                } catch (rdmaflux.cm.RdmaCmException.Rejected e) {
                    throw new Comparison.NothingMeasured("connection refused: " + e.getMessage());
                }
                try (client) {
                    stamps = client.driven(2, warm, iters).stamps();
                    clientJit = client.timedJitMillis();
                }
            } finally {
                control.send("stop");
            }
            String done = control.answer();
            if (!done.startsWith("done ")) {
                throw new IllegalStateException("server: " + done);
            }
            return new Run(stamps, Long.parseLong(done.substring(5).trim()), clientJit,
                    (stamps[iters] - stamps[0]) / 1e6);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** One perftest run, its client here against its server on the other host: {@code t_typical} in us. */
    private double perftest(String tool, int size, int iters, boolean events) {
        try {
            return perftestRun(tool, size, iters, events);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * One perftest run (with {@code -e} when {@code events}), its client here against its server on the other
     * host: {@code t_typical} in us.
     *
     * @throws Comparison.NothingMeasured when the client's connection was refused before it measured anything,
     *         or its result row holds no time
     */
    private double perftestRun(String tool, int size, int iters, boolean events) throws IOException {
        if (!CTools.installed(tool)) {
            throw new IllegalStateException(tool + " is not installed (Debian package perftest)");
        }
        int port = nextPort++;
        control.request("perftest " + tool + " " + size + " " + iters + " " + port + (events ? " -e" : ""), true);
        List<String> args = new ArrayList<>(List.of(tool, "-R", "-F", "-d", device, "-p", Integer.toString(port),
                "-s", Integer.toString(size), "-n", Integer.toString(iters), CTools.OLD_POST_SEND));
        if (events) {
            args.add("-e");
        }
        args.add(server.getHostAddress());
        Path log = work.resolve(tool + "-" + port + "-client.txt");
        String text;
        int exit;
        try {
            Process client = CTools.start(args, log);
            if (!client.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                client.destroyForcibly();
                control.answer();
                throw new IllegalStateException(tool + " client did not finish within " + timeout);
            }
            exit = client.exitValue();
            text = Files.readString(log);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        String done = control.answer();
        // #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
        double v = ToolOutput.parseRow(text, size, 9, 4);
        if (exit != 0 || Double.isNaN(v) || v <= 0) {
            String why = tool + " client exited with " + exit + ": " + CTools.tail(log);
            throw ToolOutput.refused(text) || ToolOutput.noClock(text, size, 9, 4)
                    ? new Comparison.NothingMeasured(why) : new IllegalStateException(why);
        }
        if (!done.equals("done")) {
            throw new IllegalStateException(tool + " server: " + done);
        }
        return v;
    }

    private void say(String format, Object... args) {
        say.accept(format, args);
    }
}
