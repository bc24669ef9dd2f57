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
     * Every row: the verbs-layer tests at each size, then the reactive ping-pong at 2 B against the same
     * {@code ib_send_lat} median.
     */
    List<Row> all(int[] sizes, int iters, int repeat) throws IOException {
        int warm = quick ? 10 : 30;
        int readWarm = quick ? 200 : 1000;
        List<Row> rows = new ArrayList<>();
        say("bench: warming up the JIT on the cross-host loops");
        for (HostLatency.Test t : HostLatency.Test.values()) {
            try {
                warmUp(t, t == HostLatency.Test.READ ? readWarm : 10 * warm, iters);
            } catch (RuntimeException e) {
                say("bench: warm-up of %s failed: %s", t, e.getMessage());
            }
        }
        try {
            reactive(10 * warm, iters);
        } catch (RuntimeException e) {
            say("bench: warm-up of the reactive ping-pong failed: %s", e.getMessage());
        }
        double sendLat2 = Double.NaN;
        for (int size : sizes) {
            for (HostLatency.Test t : HostLatency.Test.values()) {
                rows.add(row(t, size, iters, repeat));
                if (t == HostLatency.Test.SEND && size == 2) {
                    sendLat2 = rows.getLast().c();
                }
            }
        }
        rows.add(reactiveRow(warm, iters, repeat, sendLat2));
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
                    try {
                        Run run = ours(t, size, w, iters);
                        jitBusy[0] += run.jitBusy() ? 1 : 0;
                        return new Comparison.Measured(Stats.typicalMicros(run.stamps(), t.rttFactor), Double.NaN);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }),
                new Comparison.Side(t.tool, false, w -> {
                    try {
                        return new Comparison.Measured(perftest(t.tool, size, iters), Double.NaN);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                })));
        if (!runs.errors().getFirst().isEmpty()) {
            ourFailure = true;
        }
        return finish(Comparison.row(t.metric, size, "us", t.tool, Row.Target.RATIO_AT_MOST, runs, 1, Stats::median,
                jitBusy[0] > 0 ? "a JIT was busy in " + jitBusy[0] + " of ours" : "", "C", repeat));
    }

    private Row reactiveRow(int warm, int iters, int repeat, double cSendLat) throws IOException {
        List<Double> mine = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        for (int r = 0; r < repeat; r++) {
            try {
                CrossHostJit.awaitQuiet(quick, say);
                mine.add(Stats.typicalMicros(reactive(2 * warm, iters), 2));
            } catch (RuntimeException e) {
                ourFailure = true;
                errors.add("ours failed: " + e.getMessage());
            }
        }
        String note = "rdmaflux.cm RdmaConnection, echo RdmaServer on the server host, default options; C = the "
                + "ib_send_lat 2 B median above";
        String rest = note(repeat, mine, List.of(), errors);
        return finish(new Row("reactive send/recv latency p50", 2, "us", Stats.median(mine), cSendLat, "ib_send_lat",
                Row.Target.NONE, Double.NaN, rest.isEmpty() ? note : note + "; " + rest));
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
    private Run ours(HostLatency.Test t, int size, int warm, int iters) throws IOException {
        int port = nextPort++;
        boolean served = t != HostLatency.Test.READ; // a read needs nothing of the server's loop
        control.request("ours " + t + " " + size + " " + (served ? warm : 0) + " " + (served ? iters : 0) + " "
                + port, true);
        long[] stamps;
        long clientJit;
        try (HostLatency end = HostLatency.connect(new InetSocketAddress(server, port), HostLatency.MAX_SIZE,
                timeout)) {
            stamps = end.run(t, size, warm, iters);
            clientJit = end.timedJitMillis();
        } catch (RuntimeException e) {
            control.answer(); // keep the conversation in step: the server side ends with its own answer
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
     * Untimed runs of a test until neither JVM's JIT was busy through one's timed rounds (at most 10, quick 3),
     * so the timed runs do not share a VM's one CPU with a compiler thread.
     */
    private void warmUp(HostLatency.Test t, int warm, int iters) throws IOException {
        int max = quick ? 3 : 10;
        for (int round = 1; round <= max; round++) {
            Run r = ours(t, 2, warm, iters);
            if (!r.jitBusy() || round == max) {
                say("bench: %s warm after %d runs (JIT in the last one's timed rounds: server %d ms, client %d ms "
                        + "of %.0f ms)", t, round, r.serverJitMillis(), r.clientJitMillis(), r.wallMillis());
                return;
            }
            CrossHostJit.awaitQuiet(quick, say);
        }
    }

    private long[] reactive(int warm, int iters) throws IOException {
        int port = nextPort++;
        control.request("reactive 2 " + port, true);
        try {
            return ReactiveLatency.pingPong(new InetSocketAddress(server, port), 2, warm, iters, timeout).stamps();
        } finally {
            control.send("stop");
            control.expect("done");
        }
    }

    /** One perftest run, its client here against its server on the other host: {@code t_typical} in us. */
    private double perftest(String tool, int size, int iters) throws IOException {
        if (!CTools.installed(tool)) {
            throw new IllegalStateException(tool + " is not installed (Debian package perftest)");
        }
        int port = nextPort++;
        control.request("perftest " + tool + " " + size + " " + iters + " " + port, true);
        List<String> args = new ArrayList<>(List.of(tool, "-R", "-F", "-d", device, "-p", Integer.toString(port),
                "-s", Integer.toString(size), "-n", Integer.toString(iters), CTools.OLD_POST_SEND,
                server.getHostAddress()));
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
            throw new IllegalStateException(tool + " client exited with " + exit + ": " + CTools.tail(log));
        }
        if (!done.equals("done")) {
            throw new IllegalStateException(tool + " server: " + done);
        }
        return v;
    }

    private void say(String format, Object... args) {
        say.accept(format, args);
    }

    private static String note(int repeat, List<Double> mine, List<Double> theirs, List<String> errors) {
        List<String> parts = new ArrayList<>();
        if (repeat > 1 && !mine.isEmpty()) {
            parts.add("median of " + repeat + ": ours " + Stats.range(mine)
                    + (theirs.isEmpty() ? "" : ", C " + Stats.range(theirs)));
        }
        parts.addAll(errors.stream().distinct().toList());
        return String.join("; ", parts);
    }
}
