package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;

/**
 * The rows of {@code --only rsocket} (issue #13): RSocket over rdmaflux against rdmaflux's own reactive
 * ping-pong and stream, with RSocket over TCP beside them (no target). Each ratio's two sides go through
 * {@link Comparison#run}: measured in this run, alternating, {@code repeat} times, each after the same untimed
 * work; the table shows each side's median and the note both ranges, and the "C" column holds the baseline,
 * which is ours too.
 */
final class RSocketRows {
    /** Metric of the RSocket request-response row over rdmaflux. */
    static final String RR_METRIC = "RSocket request-response p50";
    /** Its target (issue #13): p50 at most 1.3 × the reactive ping-pong's. */
    static final Row.Target RR_TARGET = Row.Target.ratioAtMost(1.3);
    /** Metric of the RSocket request-stream rows over rdmaflux. */
    static final String RS_METRIC = "RSocket request-stream";
    /** Their target (issue #13): at least 0.8 × the reactive SEND stream. */
    static final Row.Target RS_TARGET = Row.Target.ratioAtLeast(0.8);
    /**
     * Pairs of runs per pair of {@code --repeat}, as the reactive SEND stream rows take {@link StreamRows#CHUNKS}
     * rounds: a run (a stream, or 300 round trips) lasts 0.2-1 s under emulation, and its value moves by up to
     * 2× from run to run on either side, so the interval of a median over 5 pairs is too wide to decide.
     */
    static final int PAIRS = StreamRows.CHUNKS;
    /**
     * The most untimed rounds of 4,000 messages of each side, in turn, before the rows: RSocket's path
     * (RSocket, Netty, Reactor and ours) keeps C2 busy past 40 rounds under emulation, and runs measured while
     * it compiles rise through the run on both sides (9,000 to 24,000 msg/s at 32 B).
     */
    static final int WARMUP_ROUNDS = 120;

    private final InetAddress ip;
    private final boolean quick;
    private final int repeat;
    private final Duration timeout;
    private final int latIters;
    private final int latWarm;
    private final IntUnaryOperator messages;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> say;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param quick a short run
     * @param repeat runs of each comparison
     * @param timeout the longest wait for any step
     * @param latIters timed round trips of the request-response rows
     * @param latWarm untimed round trips before them (doubled, as the reactive row does)
     * @param messages the message count of a stream of the given size: the bandwidth rows' count
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until the JIT has gone quiet
     * @param say prints a line
     */
    RSocketRows(InetAddress ip, boolean quick, int repeat, Duration timeout, int latIters, int latWarm,
                IntUnaryOperator messages, Consumer<Row> progress, Runnable awaitJitQuiet, Consumer<String> say) {
        this.ip = ip;
        this.quick = quick;
        this.repeat = repeat;
        this.timeout = timeout;
        this.latIters = latIters;
        this.latWarm = latWarm;
        this.messages = messages;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.say = say;
    }

    /** {@return whether any of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * The RSocket rows: request-response p50 over rdmaflux against {@link ReactiveLatency} (target), the
     * request-stream rate against {@link ReactiveStream} at the same sizes (target), then the same two over
     * RSocket's TCP transport against the rdmaflux values (no target).
     */
    List<Row> rows() {
        int[] sizes = quick ? new int[] {32} : new int[] {32, 8192};
        int max = sizes[sizes.length - 1];
        List<Row> rows = new ArrayList<>();
        double[] rdmaStream = new double[sizes.length];
        Arrays.fill(rdmaStream, Double.NaN);
        double rdmaRr = Double.NaN;
        InetSocketAddress any = new InetSocketAddress(ip, 0);
        // The baseline's ping-pong, as RSocket's, on one connection opened once and warmed the same way.
        try (RSocketBench rs = RSocketBench.open(RSocketBench.Transport.RDMA, any, max, timeout);
             ReactiveStream pair = ReactiveStream.open(any, max, timeout);
             ReactiveLatency.Echo echo = new ReactiveLatency.Echo(any, 2, timeout);
             ReactiveLatency.Client client = new ReactiveLatency.Client(echo.address(), ReactiveLatency.options(2),
                     timeout)) {
            int chunk = quick ? 1000 : 4000;
            // Both sides warm up together, a round of each in turn, the same number of each (one rule for both).
            Warmup.settleTogether(quick ? 3 : WARMUP_ROUNDS, List.of(
                    new Warmup.Side("RSocket request-stream (RDMA)",
                            () -> rs.requestStream(sizes[0], chunk).messagesPerSecond()),
                    new Warmup.Side("reactive SEND stream", () -> pair.stream(sizes[0], chunk).messagesPerSecond())),
                    Warmup.HOTSPOT, say);
            rs.requestResponse(2, latWarm * 2, latIters);
            client.pingPong(2, latWarm * 2, latIters, false);
            // Both sides: latWarm * 2 untimed round trips before each timed run, a quiet JIT, in turn.
            int pairs = quick ? repeat : repeat * PAIRS;
            Comparison.Runs rrRuns = Comparison.run(new Comparison.Rules(pairs, latWarm * 2, awaitJitQuiet), List.of(
                    Comparison.Side.ours("RSocket", w -> {
                        VerbsTests.Latency l = rs.requestResponse(2, w, latIters);
                        return new Comparison.Measured(Stats.typicalMicros(l.stamps(), 2), l.allocPerMessage());
                    }),
                    Comparison.Side.ours("reactive ping-pong", w -> new Comparison.Measured(
                            Stats.typicalMicros(client.pingPong(2, w, latIters, false).stamps(), 2), Double.NaN))));
            failed |= rrRuns.failed(1);
            Row rr = Comparison.row(RR_METRIC, 2, "us", "reactive ping-pong (ours)", RR_TARGET, rrRuns, 1,
                    Stats::median, "half round trip as perftest's t_typical, " + latIters + " round trips after "
                    + latWarm * 2 + " untimed, both sides; RSocket over RdmaClientTransport/RdmaServerTransport, each "
                    + "side on its own loops with the transports' default options (frames handled on the loops); "
                    + "baseline the reactive send/recv latency row's ping-pong on one connection opened once, as "
                    + "RSocket's; alloc = all threads", "baseline", pairs);
            progress.accept(rr);
            rows.add(rr);
            rdmaRr = rr.ours();
            for (int i = 0; i < sizes.length; i++) {
                int size = sizes[i];
                int n = messages.applyAsInt(size);
                int warm = Math.max(16, n / 10);
                Comparison.Runs rsRuns = Comparison.run(new Comparison.Rules(pairs, warm, awaitJitQuiet), List.of(
                        Comparison.Side.ours("RSocket", w -> {
                            rs.requestStream(size, w);
                            ReactiveStream.Run run = rs.requestStream(size, n);
                            return new Comparison.Measured(run.messagesPerSecond(), run.allAlloc());
                        }),
                        Comparison.Side.ours("reactive SEND stream", w -> {
                            pair.stream(size, w);
                            return new Comparison.Measured(pair.stream(size, n).messagesPerSecond(), Double.NaN);
                        })));
                failed |= rsRuns.failed(1);
                say.accept("  RSocket request-stream " + Row.sizeText(size) + ": RSocket "
                        + StreamRows.rates(rsRuns.values(0)) + ", reactive SEND stream "
                        + StreamRows.rates(rsRuns.values(1)) + " msg/s");
                // Both sides' rates go through the reactive SEND stream rows' rule, so a run the emulator slowed to
                // under half the side's fastest counts on neither side.
                Row row = Comparison.row(RS_METRIC, size, "msg/s", "reactive SEND stream (ours)", RS_TARGET, rsRuns,
                        1, Stats::fastMode, n + " payloads of data only, unbounded demand, after " + warm + " untimed, "
                        + "both sides; baseline the reactive SEND stream at the same size and count, default options "
                        + "as the transports'; "
                        + "each side's rate is the median of its runs that reached half its fastest (Stats.fastMode, "
                        + "as the reactive SEND stream rows); RSocket " + StreamRows.streams(rsRuns.values(0))
                        + ", baseline " + StreamRows.streams(rsRuns.values(1)) + "; alloc = all threads", "baseline",
                        pairs);
                progress.accept(row);
                rows.add(row);
                rdmaStream[i] = row.ours();
            }
        } catch (RuntimeException e) {
            failed = true;
            Row row = new Row(RR_METRIC, 2, "us", Double.NaN, Double.NaN, "reactive ping-pong (ours)",
                    RR_TARGET, Double.NaN, "failed: " + e.getMessage()).judged(Verdict.Interval.NONE, true);
            progress.accept(row);
            rows.add(row);
        }
        rows.addAll(tcpRows(sizes, rdmaRr, rdmaStream));
        return rows;
    }

    /** RSocket over its TCP transport, for the record: the same loops, against the RSocket-over-RDMA values. */
    private List<Row> tcpRows(int[] sizes, double rdmaRr, double[] rdmaStream) {
        List<Row> rows = new ArrayList<>();
        String tool = "RSocket over rdmaflux";
        String what = "rsocket-transport-netty (TcpServerTransport/TcpClientTransport) on " + ip.getHostAddress()
                + "; under emulated CPUs and a software RoCE device this says nothing about hardware";
        try (RSocketBench tcp = RSocketBench.open(RSocketBench.Transport.TCP, new InetSocketAddress(ip, 0),
                sizes[sizes.length - 1], timeout)) {
            int chunk = quick ? 1000 : 4000;
            settle("RSocket request-stream (TCP)", quick ? 3 : 10, () -> tcp.requestStream(sizes[0], chunk)
                    .messagesPerSecond());
            tcp.requestResponse(2, latWarm * 2, latIters);
            awaitJitQuiet.run();
            List<Double> lat = new ArrayList<>();
            double alloc = Double.NaN;
            for (int r = 0; r < repeat; r++) {
                VerbsTests.Latency l = tcp.requestResponse(2, latWarm * 2, latIters);
                lat.add(Stats.typicalMicros(l.stamps(), 2));
                alloc = Double.isNaN(alloc) ? l.allocPerMessage() : Math.max(alloc, l.allocPerMessage());
            }
            Row rr = new Row("RSocket over TCP request-response p50", 2, "us", Stats.median(lat), rdmaRr, tool,
                    Row.Target.NONE, alloc, what + "; alloc = all threads" + (repeat > 1 ? "; median of " + repeat
                    + ": " + Stats.range(lat) : ""));
            progress.accept(rr);
            rows.add(rr);
            for (int i = 0; i < sizes.length; i++) {
                int size = sizes[i];
                int n = messages.applyAsInt(size);
                List<Double> rates = new ArrayList<>();
                double a = Double.NaN;
                for (int r = 0; r < repeat; r++) {
                    tcp.requestStream(size, Math.max(16, n / 10));
                    ReactiveStream.Run run = tcp.requestStream(size, n);
                    rates.add(run.messagesPerSecond());
                    a = Double.isNaN(a) ? run.allAlloc() : Math.max(a, run.allAlloc());
                }
                Row row = new Row("RSocket over TCP request-stream", size, "msg/s", Stats.median(rates), rdmaStream[i],
                        tool, Row.Target.NONE, a, n + " payloads; " + what + "; alloc = all threads"
                        + (repeat > 1 ? "; median of " + repeat + ": " + Stats.range(rates) : ""));
                progress.accept(row);
                rows.add(row);
            }
        } catch (RuntimeException | LinkageError e) {
            failed = true;
            Row row = new Row("RSocket over TCP request-response p50", 2, "us", Double.NaN, rdmaRr, tool,
                    Row.Target.NONE, Double.NaN, "failed: " + e);
            progress.accept(row);
            rows.add(row);
        }
        return rows;
    }

    /** Untimed rounds until the JIT is done with the path ({@link Warmup#settle}). */
    private void settle(String what, int max, Supplier<Double> rate) {
        Warmup.settle(what, max, rate, "msg/s", say);
    }
}
