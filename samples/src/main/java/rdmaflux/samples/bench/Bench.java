package rdmaflux.samples.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.IntUnaryOperator;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaDevice;

/**
 * Measures rdmaflux against rdma-core's C tools on the same device in the same run and prints one table:
 * ours, C, the ratio with its 95 % interval, the target and what it comes to: met, missed, inconclusive or
 * failed ({@link Verdict}; none is hidden). Every row with a target measures its two sides through one
 * method ({@link Comparison}).
 *
 * <ul>
 *   <li>Latency (p50, as perftest's {@code t_typical}): SEND/RECV ping-pong vs {@code ib_send_lat},
 *       RDMA WRITE ping-pong vs {@code ib_write_lat}, RDMA READ vs {@code ib_read_lat}; target ours ≤ 1.10 × C.
 *       Plus the reactive API's send/recv ping-pong against the same {@code ib_send_lat} value.</li>
 *   <li>Bandwidth: SEND vs {@code ib_send_bw}, RDMA WRITE vs {@code ib_write_bw}, message sizes 2 B to
 *       1 MiB; target ours ≥ 0.95 × C. Both sides post with {@code ibv_post_send} (perftest with
 *       {@code --use_old_post_send}); then the same with ours posting through the extended post API
 *       ({@code ibv_wr_*}) and perftest left to its default, its {@code ibv_wr_*} path where it supports
 *       the device.</li>
 *   <li>Reactive throughput of messages larger than the receive buffers (64 KiB to 16 MiB, which the
 *       receiver RDMA-READs) vs {@code ib_read_bw}; target ours ≥ 0.9 × C; heap allocation per message
 *       for the record.</li>
 *   <li>Connection setup rate with per-step times vs {@code cmtime}; target ours ≥ 0.8 × C.</li>
 *   <li>Connection setup through the reactive API, N (1,000) {@code RdmaConnection.connect} at once vs
 *       {@code cmtime -c N}; target ours ≥ 0.8 × C.</li>
 *   <li>Connections at scale: one server JVM with a shared receive pool holding N (10,000) connections, their
 *       setup rate vs {@code cmtime -c N}, a message each, and the server's pinned memory (target at most
 *       32 KiB) and heap per idle connection ({@link ScaleRows}).</li>
 *   <li>Multicast datagram rate vs {@code mckey} (a receiver and a send-only sender, N datagrams of 100 B and
 *       1 KiB): on the verbs layer with the bandwidth target, ours ≥ 0.95 × C; through the reactive
 *       {@code RdmaMulticast} API, ours ≥ 0.8 × C.</li>
 *   <li>The reactive send/recv ping-pong with busy polling vs the verbs layer's spin ping-pong of the same
 *       run, both in JVMs of their own ({@link BusyPollFork}); target ours ≤ 1.3 × that.</li>
 *   <li>Heap allocation per message in the steady-state verbs loops (both threads); target 0.</li>
 *   <li>The reactive SEND stream against the verbs one with the spin hint, each reactive API's heap per message
 *       ({@link StreamRows}), and RSocket over rdmaflux against the reactive API, with RSocket over TCP for
 *       the record ({@link RSocketRows}).</li>
 *   <li>A CPU column on the stream, latency and multicast rows: process CPU time (user + system) per
 *       message, ours over the timed part, the C tool's processes between the lines of its output that
 *       bracket its timed part ({@link CpuTime}, {@link CTools}).</li>
 * </ul>
 * The latency and bandwidth loops use the verbs layer directly (its allocation-free path), with perftest's
 * depths and signaling ({@link VerbsRows}); the C tools run with {@code -R} against a server instance on the
 * same address.
 * Client sides (ours and C) run on CPU 0, server sides on CPU 1, unless {@code --no-pin}.
 * {@code docs/benchmarks.md} explains the method and how to read results from the emulated sandbox.
 * {@link CrossHostBench} runs the latency rows with each server on one host and each client on another.
 *
 * <p>Use {@code scripts/bench} (builds, runs in the Soft-RoCE sandbox when the host has no RDMA device,
 * and updates {@code docs/benchmarks.md}). By hand, on the sandbox:
 * <pre>{@code
 * scripts/sandbox/run -- $JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 \
 *     -cp samples/target/classes:$(cat samples/target/runtime-classpath.txt) \
 *     rdmaflux.samples.bench.Bench --quick
 * }</pre>
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Latency, bandwidth, connection setup, multicast and allocation of rdmaflux vs rdma-core's "
                + "C tools.")
public final class Bench implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public Bench() {
    }

    @Spec
    CommandSpec spec;

    @Option(names = {"-a", "--address"}, description = "IP address of the RDMA interface (default: "
            + "$RDMAFLUX_TEST_ADDR, else $RDMAFLUX_SANDBOX_ADDR).")
    String address = firstEnv("RDMAFLUX_TEST_ADDR", "RDMAFLUX_SANDBOX_ADDR");

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEVICE", description = "RDMA device (default: "
            + "$RDMAFLUX_TEST_DEVICE, else $RDMAFLUX_SANDBOX_DEVICE, else the first).")
    String device = firstEnv("RDMAFLUX_TEST_DEVICE", "RDMAFLUX_SANDBOX_DEVICE");

    @Option(names = "--quick", description = "A short run (a few sizes, few iterations): checks that everything "
            + "works, numbers are rough.")
    boolean quick;

    @Option(names = {"-o", "--out"}, paramLabel = "DIR", description = "Also write results.md, bandwidth.png and "
            + "ratios.png to DIR.")
    Path out;

    @Option(names = {"-p", "--port"}, description = "First port for the servers (default: ${DEFAULT-VALUE}).")
    int basePort = 19000;

    @Option(names = "--lat-iters", description = "Timed iterations per latency test (default: 300, quick 30).")
    Integer latIters;

    @Option(names = "--bw-mib", description = "MiB sent per bandwidth test and size (default: 16, quick 2).")
    Integer bwMib;

    @Option(names = {"-c", "--connections"}, description = "Connections for the setup rate (default: 100, "
            + "quick 5).")
    Integer connections;

    @Option(names = "--reactive-connections", description = "Connections for the reactive API's setup rate vs "
            + "cmtime (default: 1000, quick 20).")
    Integer reactiveConnections;

    @Option(names = "--scale-connections", description = "Connections one server holds in the scale rows, vs "
            + "cmtime (default: 10000, quick 100).")
    Integer scaleConnections;

    @Option(names = "--mc-count", description = "Datagrams per multicast run (default: 4000, quick 1000; at most "
            + "32768).")
    Integer mcCount;

    @Option(names = "--mc-group", description = "First multicast group; each run takes the next address "
            + "(default: ${DEFAULT-VALUE}).")
    String mcGroup = "239.192.77.1";

    @Option(names = {"-r", "--repeat"}, description = "Pairs of runs of each comparison, ours and C alternating; "
            + "the table shows each side's median and the ratio's 95 %% interval, which takes at least "
            + Verdict.MIN_PAIRS + " (default: " + FULL_PAIRS + ", quick 1).")
    Integer repeatOption;

    @Option(names = "--timeout", description = "Seconds any single wait or tool run may take (default: "
            + "${DEFAULT-VALUE}).")
    int timeoutSeconds = 60;

    /** The groups of rows {@code --only} can choose. */
    static final java.util.Set<String> GROUPS = java.util.Set.of("latency", "bandwidth", "extended", "reactive",
            "large", "setup", "scale", "multicast", "stream", "rsocket");

    @Option(names = "--only", split = ",", paramLabel = "GROUP",
            description = "Run only these groups: latency, bandwidth, extended (the bandwidth rows posting through "
                    + "ibv_wr_*), reactive, large (the reactive API's messages larger than the receive buffers, vs "
                    + "ib_read_bw), setup, scale (one server holding 10,000 connections: setup rate vs cmtime, memory per "
                    + "idle connection), multicast, stream (the reactive SEND stream vs the verbs one, and "
                    + "what each reactive API allocates), rsocket (RSocket over rdmaflux vs the reactive API, and over "
                    + "TCP) (default: all).")
    java.util.Set<String> only = GROUPS;

    @Option(names = "--no-pin", description = "Do not pin the client side to CPU 0 and the server side to CPU 1 "
            + "(ours with sched_setaffinity, the C tools with taskset).")
    boolean noPin;

    @Option(names = {"-v", "--verbose"}, description = "Print the C tools' output.")
    boolean verbose;

    @Option(names = "--command", hidden = true, description = "The command line to record in results.md.")
    String command;

    /**
     * Pairs of runs per comparison in a full run: the fewest a ratio's interval is computed from
     * ({@link Verdict#MIN_PAIRS}), so a row can be conclusive; more would lengthen the full run by the same
     * factor.
     */
    static final int FULL_PAIRS = Verdict.MIN_PAIRS;

    private PrintWriter pw;
    private boolean ourFailure;
    private Comparison comparison;
    private int repeat;

    /**
     * Runs the benchmark.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new Bench()).execute(args));
    }

    private static String firstEnv(String... names) {
        for (String n : names) {
            String v = System.getenv(n);
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return null;
    }

    @Override
    public Integer call() throws Exception {
        pw = spec.commandLine().getOut();
        if (!Rdma.isAvailable()) {
            spec.commandLine().getErr().println("bench: RDMA is not available: "
                    + Rdma.unavailabilityCause().getMessage());
            return 2;
        }
        if (address == null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--address is required outside the sandbox");
        }
        if (device == null) {
            device = Rdma.devices().stream().map(RdmaDevice::name).findFirst().orElseThrow();
        }
        int lat = latIters != null ? latIters : quick ? 30 : 300;
        repeat = repeatOption != null ? Math.max(1, repeatOption) : quick ? 1 : FULL_PAIRS;
        comparison = new Comparison(repeat, this::awaitJitQuiet, this::progress);
        int latWarm = quick ? 10 : 30;
        long budget = (bwMib != null ? bwMib : quick ? 2 : 16) * 1024L * 1024L;
        int bwMax = quick ? 500 : 4000;
        int conns = connections != null ? connections : quick ? 5 : 100;
        int[] latSizes = quick ? new int[] {2} : new int[] {2, 4096};
        int[] bwSizes = quick ? new int[] {2, 65536}
                : new int[] {2, 8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288, 1 << 20};
        int mcN = mcCount != null ? mcCount : quick ? 1000 : 4000;
        if (mcN < 1 || mcN > 32768) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--mc-count must be in [1, 32768]");
        }
        int[] mcSizes = quick ? new int[] {100} : new int[] {100, 1024};
        for (String g : only) {
            if (!GROUPS.contains(g)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--only: no group " + g);
            }
        }
        if (lat < 5) {
            throw new CommandLine.ParameterException(spec.commandLine(), "perftest needs --lat-iters >= 5");
        }
        Duration timeout = Duration.ofSeconds(timeoutSeconds);
        InetAddress ip = InetAddress.getByName(address);
        boolean pin = !noPin && Affinity.available();
        CTools c = new CTools(device, ip.getHostAddress(), basePort + 100, timeout, verbose, pin);
        Instant started = Instant.now();
        say("bench: %s on %s, %s, kernel %s, %s %s, %d CPUs%s", quick ? "quick run" : "full run", device,
                ip.getHostAddress(), System.getProperty("os.version"), System.getProperty("java.vm.name"),
                Runtime.version(), Runtime.getRuntime().availableProcessors(),
                System.getenv("RDMAFLUX_SANDBOX_INSIDE") != null ? " (Soft-RoCE sandbox VM, TCG emulation)" : "");
        say("bench: %s", pin ? "client side on CPU 0, server side on CPU 1 (ours and the C tools alike)"
                : "threads and processes not pinned");

        List<Row> rows = new ArrayList<>();
        double sendLat2 = Double.NaN;
        if (only.contains("latency") || only.contains("bandwidth") || only.contains("extended")) {
            VerbsRows verbs = new VerbsRows(ip, device, basePort, quick, timeout, pin, only, comparison,
                    this::progress, this::awaitJitQuiet, line -> say("%s", line));
            sendLat2 = verbs.rows(rows, lat, latWarm, budget, bwMax, latSizes, bwSizes, c);
            ourFailure |= verbs.failed();
        }
        ReactiveRows reactive = new ReactiveRows(ip, quick, repeat, timeout, this::progress, this::awaitJitQuiet,
                line -> say("%s", line), pin);
        if (only.contains("latency")) {
            rows.add(reactive.busyPollRow(basePort + 80));
        }
        if (only.contains("reactive")) {
            Row r = reactive.pingPongRow(lat, latWarm, sendLat2);
            rows.add(r.withCpu(r.cpuOurs(), findRow(rows, "send/recv latency p50", 2).cpuC()));
        }
        long b = budget;
        int m = bwMax;
        IntUnaryOperator messages = size -> (int) Math.max(16, Math.min(m, b / size));
        if (only.contains("stream")) {
            StreamRows s = new StreamRows(ip, basePort + 70, quick, repeat, timeout, pin, messages, this::progress,
                    this::awaitJitQuiet, line -> say("%s", line));
            rows.addAll(s.streamRows());
            ourFailure |= s.failed();
        }
        if (only.contains("rsocket")) {
            RSocketRows r = new RSocketRows(ip, quick, repeat, timeout, lat, latWarm, messages, this::progress,
                    this::awaitJitQuiet, line -> say("%s", line));
            rows.addAll(r.rows());
            ourFailure |= r.failed();
        }
        if (only.contains("large")) {
            LargeRows large = new LargeRows(ip, quick, repeat, timeout, comparison, this::progress,
                    this::awaitJitQuiet, line -> say("%s", line));
            rows.addAll(large.rows(c));
            ourFailure |= large.failed();
        }
        if (only.contains("setup")) {
            SetupRows setup = new SetupRows(ip, basePort, repeat, timeout, this::progress, this::awaitJitQuiet);
            rows.addAll(setup.rows(conns, c));
            ourFailure |= setup.failed();
            rows.add(reactive.setupRow(reactiveConnections != null ? reactiveConnections : quick ? 20 : 1000, c));
        }
        if (only.contains("scale")) {
            ScaleRows scale = new ScaleRows(ip, quick, repeat, timeout, pin, this::progress, this::awaitJitQuiet,
                    line -> say("%s", line));
            rows.addAll(scale.rows(scaleConnections != null ? scaleConnections : quick ? 100 : 10_000, c));
            ourFailure |= scale.failed();
        }
        if (only.contains("multicast")) {
            MulticastRows mc = new MulticastRows(ip, device, mcGroup, quick, repeat, verbose, timeout, pin, comparison,
                    this::progress, this::awaitJitQuiet, line -> say("%s", line));
            rows.addAll(mc.rows(mcN, mcSizes, c));
            ourFailure |= mc.failed();
        }
        ourFailure |= reactive.failed() | comparison.failed();

        String table = Table.text(rows);
        pw.println();
        pw.print(table);
        pw.println();
        pw.println("bench: " + Table.summary(rows).replace("**", ""));
        // Repeated under the table so that a log cut to its last lines still says which row failed and why.
        rows.stream().filter(r -> r.outcome() == Verdict.Outcome.FAILED
                || r.note() != null && r.note().contains("failed")).forEach(r -> pw.println(
                "bench: FAILED: " + r.metric() + (r.size() > 0 ? " " + Row.sizeText(r.size()) : "") + ": "
                        + r.note()));
        pw.printf("bench: finished in %.0f s%n", Duration.between(started, Instant.now()).toMillis() / 1000.0);
        pw.flush();
        if (out != null) {
            write(rows, started);
        }
        // A row whose comparison failed (either side) fails the run; missed and inconclusive rows are results.
        boolean anyFailed = rows.stream().anyMatch(r -> r.outcome() == Verdict.Outcome.FAILED);
        return ourFailure || anyFailed ? 1 : 0;
    }

    /** Waits until the JIT is idle ({@link Warmup#awaitJitQuiet}): at most 5 s in a quick run, 30 s otherwise. */
    private void awaitJitQuiet() {
        Warmup.awaitJitQuiet(Duration.ofSeconds(quick ? 5 : 30), line -> say("%s", line));
    }

    /** {@return the row of {@code metric} at {@code size}, or an empty one when that row did not run} */
    static Row findRow(List<Row> rows, String metric, long size) {
        return rows.stream().filter(r -> r.metric().equals(metric) && r.size() == size).findFirst()
                .orElse(new Row(metric, size, "", Double.NaN, Double.NaN, "", Row.Target.NONE, Double.NaN, ""));
    }

    private void progress(Row r) {
        say("bench: %-32s %8s  ours %9s  C %9s %-7s ratio %6s%s  %s%s%s", r.metric(), Row.sizeText(r.size()),
                Row.fmt(r.ours()), Row.fmt(r.c()), r.unit(), Row.fmt(r.ratio()), r.interval().known() ? " (95 % "
                + r.intervalText() + ")" : "", r.verdict(),
                Double.isNaN(r.cpuOurs()) && Double.isNaN(r.cpuC()) ? "" : "  CPU us/msg ours " + Row.fmt(r.cpuOurs())
                        + ", C " + Row.fmt(r.cpuC()),
                r.note().isEmpty() ? "" : "  (" + r.note() + ")");
    }

    private void write(List<Row> rows, Instant started) throws IOException {
        Files.createDirectories(out);
        String env = System.getenv("RDMAFLUX_SANDBOX_INSIDE") != null
                ? "Soft-RoCE sandbox VM (qemu TCG, 2 emulated CPUs; absolute numbers are those of an emulated CPU)"
                : "this host's RDMA device";
        StringBuilder md = new StringBuilder();
        md.append("Run ").append(started.truncatedTo(ChronoUnit.SECONDS)).append(quick ? " (quick)" : "")
                .append(" on `").append(device).append("` at ").append(address).append(", ").append(env)
                .append(".\n\n");
        if (command != null) {
            md.append("Command: `").append(command).append("`\n\n");
        }
        md.append("Kernel ").append(System.getProperty("os.version")).append(", ")
                .append(System.getProperty("java.vm.name")).append(' ').append(Runtime.version())
                .append(", JVM options `")
                .append(String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments())).append("`, ")
                .append(Runtime.getRuntime().availableProcessors()).append(" CPUs.\n\n");
        md.append(Table.markdown(rows));
        md.append('\n').append(Table.summary(rows)).append('\n');
        Files.writeString(out.resolve("results.md"), md);
        List<Row> bw = rows.stream().filter(r -> r.unit().equals("Gbit/s") && !r.metric().contains("ibv_wr")
                && !r.metric().startsWith(LargeRows.METRIC)).toList();
        Charts.bandwidth(bw, "Bandwidth, rdmaflux (verbs) vs perftest, " + device, out.resolve("bandwidth.png"));
        Charts.ratios(rows, "rdmaflux / C tool, " + device + (quick ? " (quick run)" : ""),
                out.resolve("ratios.png"));
        say("bench: wrote %s, %s, %s", out.resolve("results.md"), out.resolve("bandwidth.png"),
                out.resolve("ratios.png"));
    }

    private void say(String format, Object... args) {
        pw.println(String.format(format, args));
        pw.flush();
    }
}
