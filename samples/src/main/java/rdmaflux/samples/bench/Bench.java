package rdmaflux.samples.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import rdmaflux.cm.PortCounters;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaDevice;

/**
 * Measures rdmaflux against rdma-core's C tools on the same device in the same run and prints one table:
 * ours, C, the ratio, the target and whether it holds (a missed target is marked, never hidden).
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
 *   <li>Multicast datagram rate vs {@code mckey} (a receiver and a send-only sender, N datagrams of 100 B and
 *       1 KiB): on the verbs layer with the bandwidth target, ours ≥ 0.95 × C; through the reactive
 *       {@code RdmaMulticast} API, ours ≥ 0.8 × C.</li>
 *   <li>The reactive send/recv ping-pong with busy polling vs the verbs layer's spin ping-pong of the same
 *       run, both in JVMs of their own ({@link BusyPollFork}); target ours ≤ 1.3 × that.</li>
 *   <li>Heap allocation per message in the steady-state verbs loops (both threads); target 0.</li>
 *   <li>The reactive SEND stream against the verbs one, each reactive API's heap per message, and RSocket over
 *       rdmaflux against the reactive API (with RSocket over TCP for the record): {@link StreamRows}.</li>
 *   <li>A CPU column on the stream, latency and multicast rows: process CPU time (user + system) per
 *       message, ours over the timed part, the C tool's processes between the lines of its output that
 *       bracket its timed part ({@link CpuTime}, {@link CTools}).</li>
 * </ul>
 * The latency and bandwidth loops use the verbs layer directly (its allocation-free path), with perftest's
 * depths and signaling; the C tools run with {@code -R} against a server instance on the same address.
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

    @Option(names = "--mc-count", description = "Datagrams per multicast run (default: 4000, quick 1000; at most "
            + "32768).")
    Integer mcCount;

    @Option(names = "--mc-group", description = "First multicast group; each run takes the next address "
            + "(default: ${DEFAULT-VALUE}).")
    String mcGroup = "239.192.77.1";

    @Option(names = {"-r", "--repeat"}, description = "Runs of each comparison, ours and C alternating; the table "
            + "shows each side's median (default: 3, quick 1).")
    Integer repeatOption;

    @Option(names = "--timeout", description = "Seconds any single wait or tool run may take (default: "
            + "${DEFAULT-VALUE}).")
    int timeoutSeconds = 60;

    /** The port counter of RNR NAKs this port's responders sent: receives were not posted in time. */
    private static final String RNR_NAKS_SENT = "send_rnr_err";

    /** The groups of rows {@code --only} can choose. */
    static final java.util.Set<String> GROUPS = java.util.Set.of("latency", "bandwidth", "extended", "reactive",
            "large", "setup", "multicast", "stream", "rsocket");

    @Option(names = "--only", split = ",", paramLabel = "GROUP",
            description = "Run only these groups: latency, bandwidth, extended (the bandwidth rows posting through "
                    + "ibv_wr_*), reactive, large (the reactive API's messages larger than the receive buffers, vs "
                    + "ib_read_bw), setup, multicast, stream (the reactive SEND stream vs the verbs one, and "
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
        repeat = repeatOption != null ? Math.max(1, repeatOption) : quick ? 1 : 3;
        comparison = new Comparison(repeat, this::progress);
        int latWarm = quick ? 10 : 30;
        int readWarm = quick ? 200 : 3000; // reads take microseconds, ping-pong rounds milliseconds
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
        int maxSize = Math.max(65536, Math.max(bwSizes[bwSizes.length - 1], latSizes[latSizes.length - 1]));
        double sendLat2 = Double.NaN;
        if (only.contains("latency") || only.contains("bandwidth") || only.contains("extended")) {
            sendLat2 = verbsRows(rows, ip, maxSize, lat, latWarm, readWarm, budget, bwMax, latSizes, bwSizes, timeout,
                    pin, c);
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
        if (only.contains("stream") || only.contains("rsocket")) {
            long b = budget;
            int m = bwMax;
            StreamRows s = new StreamRows(ip, basePort + 70, quick, repeat, timeout, pin, lat, latWarm,
                    size -> (int) Math.max(16, Math.min(m, b / size)), this::progress, this::awaitJitQuiet,
                    line -> say("%s", line));
            if (only.contains("stream")) {
                rows.addAll(s.streamRows());
            }
            if (only.contains("rsocket")) {
                rows.addAll(s.rsocketRows());
            }
            ourFailure |= s.failed();
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
        List<Row> missed = rows.stream().filter(Row::missed).toList();
        pw.println();
        pw.println(missed.isEmpty() ? "bench: all targets met" : "bench: targets MISSED: " + missed.size() + " ("
                + String.join("; ", missed.stream().map(r -> r.metric() + (r.size() > 0 ? " " + Row.sizeText(r.size())
                : "")).toList()) + ")");
        // Repeated under the table so that a log cut to its last lines still says which row failed and why.
        rows.stream().filter(r -> r.note() != null && r.note().contains("failed")).forEach(r -> pw.println(
                "bench: FAILED: " + r.metric() + (r.size() > 0 ? " " + Row.sizeText(r.size()) : "") + ": "
                        + r.note()));
        pw.printf("bench: finished in %.0f s%n", Duration.between(started, Instant.now()).toMillis() / 1000.0);
        pw.flush();
        if (out != null) {
            write(rows, started);
        }
        return ourFailure ? 1 : 0;
    }

    /**
     * The latency, bandwidth and allocation rows on one connected verbs pair.
     *
     * @return the C tool's 2-byte send/recv latency (for the reactive row), NaN if not measured
     */
    private double verbsRows(List<Row> rows, InetAddress ip, int maxSize, int lat, int latWarm, int readWarm,
                             long budget, int bwMax, int[] latSizes, int[] bwSizes, Duration timeout, boolean pin,
                             CTools c) {
        double sendLat2 = Double.NaN;
        boolean classic = only.contains("latency") || only.contains("bandwidth");
        try (VerbsLink link = VerbsLink.open(new InetSocketAddress(ip, basePort), maxSize, timeout)) {
            VerbsTests t = new VerbsTests(link, timeout, pin);
            if (pin) {
                Affinity.pin(0);
            }
            if (classic) {
                warmUp(t, latWarm);
            }
            // Bandwidth first: by the time the latency loops run, the JIT has gone quiet, so no compiler
            // thread competes with the two spinning threads and the kernel's RDMA work for the 2 CPUs.
            for (int size : only.contains("bandwidth") ? bwSizes : new int[0]) {
                int n = (int) Math.max(16, Math.min(bwMax, budget / size));
                int nWarm = Math.max(16, n / 10);
                rows.add(bandwidthRow("send bandwidth", size, "ib_send_bw", n, () -> t.sendBandwidth(size, nWarm),
                        () -> t.sendBandwidth(size, n), false, c));
                rows.add(bandwidthRow("write bandwidth", size, "ib_write_bw", n, () -> t.writeBandwidth(size, nWarm),
                        () -> t.writeBandwidth(size, n), false, c));
            }
            if (only.contains("extended")) {
                rows.addAll(extendedRows(link, maxSize, budget, bwMax, bwSizes, timeout, pin, c));
            }
            for (int size : only.contains("latency") ? latSizes : new int[0]) {
                awaitJitQuiet();
                rows.add(latencyRow("send/recv latency p50", size, "ib_send_lat", lat,
                        () -> t.sendLatency(size, latWarm, lat), 2, c));
                if (size == 2) {
                    sendLat2 = rows.getLast().c();
                }
                if (size == 2) {
                    rows.add(spinHintRow(t, lat, latWarm, sendLat2));
                }
                awaitJitQuiet();
                rows.add(latencyRow("RDMA write latency p50", size, "ib_write_lat", lat,
                        () -> t.writeLatency(size, latWarm, lat), 2, c));
                awaitJitQuiet();
                rows.add(latencyRow("RDMA read latency p50", size, "ib_read_lat", lat,
                        () -> t.readLatency(size, readWarm, lat), 1, c));
            }
            if (classic) {
                rows.addAll(allocationRows(t, quick ? 20 : 100, quick ? 2000 : 20000));
            }
        } finally {
            Affinity.unpin();
        }
        return sendLat2;
    }

    /**
     * Runs the small-message streams until their rate stops rising (the JIT has compiled the data path),
     * then each latency loop once, so class loading and linking stay out of every timed run.
     */
    private void warmUp(VerbsTests t, int latWarm) {
        say("bench: warming up the JIT on the verbs loops");
        warmStreams(t, "");
        t.sendLatency(2, 0, latWarm);
        t.writeLatency(2, 0, latWarm);
        t.readLatency(2, quick ? 200 : 3000, latWarm);
    }

    /** Runs the 2-byte WRITE and SEND streams until their rate stops changing by more than 5 % a round. */
    private void warmStreams(VerbsTests t, String label) {
        int chunk = quick ? 1000 : 5000;
        int maxRounds = quick ? 3 : 30;
        for (String op : List.of("write", "send")) {
            double previous = 0;
            for (int round = 1; round <= maxRounds; round++) {
                double rate = op.equals("write") ? t.writeBandwidth(2, chunk).bytesPerSecond()
                        : t.sendBandwidth(2, chunk).bytesPerSecond();
                if (round >= 3 && Math.abs(rate - previous) < 0.05 * previous) {
                    say("bench: %s stream%s warm after %d x %d messages (%.0f msg/s)", op, label, round, chunk,
                            rate / 2);
                    break;
                }
                if (round == maxRounds) {
                    say("bench: %s stream%s after %d x %d messages (%.0f msg/s), rate still changing", op, label,
                            round, chunk, rate / 2);
                }
                previous = rate;
            }
        }
    }

    /**
     * The bandwidth rows once more, with our streams posting through {@link rdmaflux.verbs.ExtendedSendQueue}
     * ({@code ibv_wr_start} ... {@code ibv_wr_complete}, one message per batch) on a pair made with
     * {@code ibv_create_qp_ex}, against perftest left to its default post API ({@code ibv_wr_*} where it
     * supports the device; the note says which it used); same sizes, depths, signaling and target. Then the
     * steady-state allocation of the two 2-byte streams on that path.
     */
    private List<Row> extendedRows(VerbsLink like, int maxSize, long budget, int bwMax, int[] bwSizes,
                                   Duration timeout, boolean pin, CTools c) {
        List<Row> rows = new ArrayList<>();
        VerbsLink link;
        try {
            link = VerbsLink.openExtended(like, maxSize);
        } catch (RuntimeException e) {
            // No extended QP on this device (no create_qp_ex, EOPNOTSUPP): the rows say so instead of vanishing.
            ourFailure = true;
            for (int size : bwSizes) {
                for (String op : List.of("send", "write")) {
                    Row row = new Row(op + " bandwidth, ibv_wr_*", size, "Gbit/s", Double.NaN, Double.NaN,
                            "ib_" + op + "_bw", Row.Target.RATIO_AT_LEAST, Double.NaN, "ours failed: " + e.getMessage());
                    progress(row);
                    rows.add(row);
                }
            }
            return rows;
        }
        try (link) {
            VerbsTests t = new VerbsTests(link, timeout, pin);
            say("bench: warming up the JIT on the ibv_wr_* streams");
            warmStreams(t, " (ibv_wr_*)");
            for (int size : bwSizes) {
                int n = (int) Math.max(16, Math.min(bwMax, budget / size));
                int nWarm = Math.max(16, n / 10);
                rows.add(bandwidthRow("send bandwidth, ibv_wr_*", size, "ib_send_bw", n,
                        () -> t.sendBandwidth(size, nWarm), () -> t.sendBandwidth(size, n), true, c));
                rows.add(bandwidthRow("write bandwidth, ibv_wr_*", size, "ib_write_bw", n,
                        () -> t.writeBandwidth(size, nWarm), () -> t.writeBandwidth(size, n), true, c));
            }
            int bw = quick ? 2000 : 20000;
            rows.add(allocationRow("send stream 2 B, ibv_wr_*", bw, () -> t.sendBandwidth(2, bw).allocPerMessage()));
            rows.add(allocationRow("write stream 2 B, ibv_wr_*", bw,
                    () -> t.writeBandwidth(2, bw).allocPerMessage()));
        }
        return rows;
    }

    /** Waits until the JIT is idle ({@link Warmup#awaitJitQuiet}): at most 5 s in a quick run, 30 s otherwise. */
    private void awaitJitQuiet() {
        Warmup.awaitJitQuiet(Duration.ofSeconds(quick ? 5 : 30), line -> say("%s", line));
    }

    /**
     * Steady-state heap allocation of each verbs loop, after everything above ran: bytes allocated by the
     * loop's threads (ThreadMXBean) divided by messages. Target 0.
     */
    private List<Row> allocationRows(VerbsTests t, int lat, int bw) {
        List<Row> rows = new ArrayList<>();
        record Loop(String name, int messages, Supplier<Double> run) {
        }
        for (Loop l : List.of(
                new Loop("send/recv ping-pong", 2 * lat, () -> t.sendLatency(2, 0, lat).allocPerMessage()),
                new Loop("RDMA write ping-pong", 2 * lat, () -> t.writeLatency(2, 0, lat).allocPerMessage()),
                new Loop("RDMA read", lat, () -> t.readLatency(2, 0, lat).allocPerMessage()),
                new Loop("send stream 2 B", bw, () -> t.sendBandwidth(2, bw).allocPerMessage()),
                new Loop("write stream 2 B", bw, () -> t.writeBandwidth(2, bw).allocPerMessage()),
                new Loop("send stream 64 KiB", bw / 10, () -> t.sendBandwidth(65536, bw / 10).allocPerMessage()))) {
            rows.add(allocationRow(l.name(), l.messages(), l.run()));
        }
        return rows;
    }

    /** One allocation row: {@code run} measures the loop and returns its heap bytes per message. */
    private Row allocationRow(String name, int messages, Supplier<Double> run) {
        double v = Double.NaN;
        String n = messages + " messages; client and server threads";
        try {
            v = run.get();
        } catch (RuntimeException e) {
            ourFailure = true;
            n = "ours failed: " + e.getMessage();
        }
        Row row = new Row("heap allocation, steady state: " + name, 0, "B/msg", v, Double.NaN, "", Row.Target.ZERO,
                Double.NaN, n);
        progress(row);
        return row;
    }

    /** The same SEND ping-pong with a spin-wait hint in the polling loops, for the record (no target). */
    private Row spinHintRow(VerbsTests t, int lat, int latWarm, double cSendLat) {
        double v = Double.NaN;
        double cpu = Double.NaN;
        String note = "ours with Thread.onSpinWait() in the poll loops, after two untimed runs (the hint's branch is "
                + "compiled out until first taken); perftest has no such hint";
        t.spinHint = true;
        try {
            t.sendLatency(2, latWarm, lat);
            t.sendLatency(2, latWarm, lat);
            CpuTime.take(1); // untimed: not the row's CPU
            VerbsTests.Latency l = t.sendLatency(2, latWarm, lat);
            cpu = CpuTime.take(l.messages());
            v = Stats.typicalMicros(l.stamps(), 2);
        } catch (RuntimeException e) {
            ourFailure = true;
            note = "ours failed: " + e.getMessage();
        } finally {
            t.spinHint = false;
        }
        Row row = new Row("send/recv latency p50, spin hint", 2, "us", v, cSendLat, "ib_send_lat", Row.Target.NONE,
                Double.NaN, note).withCpu(cpu, Double.NaN);
        progress(row);
        return row;
    }

    private Row latencyRow(String metric, int size, String tool, int iters, Supplier<VerbsTests.Latency> ours,
                           int rttFactor, CTools c) {
        return comparison.compare(metric, size, "us", tool, Row.Target.RATIO_AT_MOST, () -> {
            VerbsTests.Latency r = ours.get();
            return new Comparison.Measured(Stats.typicalMicros(r.stamps(), rttFactor), r.allocPerMessage(),
                    CpuTime.take(r.messages()));
        }, () -> c.latency(tool, size, iters), "");
    }

    /**
     * One bandwidth comparison. {@code wrApi} lets perftest use its {@code ibv_wr_*} path (for the rows where
     * ours does); otherwise it gets {@code --use_old_post_send}. The note names the post API perftest
     * reported when it is not the one asked for, and always on the {@code ibv_wr_*} rows.
     */
    private Row bandwidthRow(String metric, int size, String tool, int n, Runnable warm,
                             Supplier<VerbsTests.Bandwidth> ours, boolean wrApi, CTools c) {
        // RNR NAKs the responder sent: a receiver that falls behind costs the sender an RNR wait each time.
        long[] rnr = new long[2];
        java.util.Set<String> apis = new java.util.TreeSet<>();
        boolean counts = metric.startsWith("send") && PortCounters.read(device, 1).get(RNR_NAKS_SENT) >= 0;
        Row row = comparison.compare(metric, size, "Gbit/s", tool, Row.Target.RATIO_AT_LEAST, () -> {
            warm.run();
            long r0 = PortCounters.read(device, 1).get(RNR_NAKS_SENT);
            VerbsTests.Bandwidth r = ours.get();
            double cpu = CpuTime.take(r.messages());
            rnr[0] += PortCounters.read(device, 1).get(RNR_NAKS_SENT) - r0;
            return new Comparison.Measured(Stats.gbits(r.bytesPerSecond()), r.allocPerMessage(), cpu);
        }, () -> {
            long r0 = PortCounters.read(device, 1).get(RNR_NAKS_SENT);
            CTools.Outcome o = c.bandwidth(tool, size, n, wrApi);
            rnr[1] += PortCounters.read(device, 1).get(RNR_NAKS_SENT) - r0;
            if (o.postApi() != null) {
                apis.add(o.postApi());
            }
            return o.ok() ? new CTools.Outcome(Stats.gbits(o.value()), null, null, o.cpuPerMessage()) : o;
        }, n + " messages");
        String note = row.note();
        if (wrApi || !apis.isEmpty() && !apis.equals(java.util.Set.of(CTools.POST_SEND_API))) {
            note += "; C posted with " + (apis.isEmpty() ? "? (perftest did not say)" : String.join(" and ", apis));
        }
        if (counts) {
            note += "; RNR NAKs ours " + rnr[0] + ", C " + rnr[1];
        }
        return row.withNote(note);
    }

    /** {@return the row of {@code metric} at {@code size}, or an empty one when that row did not run} */
    static Row findRow(List<Row> rows, String metric, long size) {
        return rows.stream().filter(r -> r.metric().equals(metric) && r.size() == size).findFirst()
                .orElse(new Row(metric, size, "", Double.NaN, Double.NaN, "", Row.Target.NONE, Double.NaN, ""));
    }

    private void progress(Row r) {
        say("bench: %-32s %8s  ours %9s  C %9s %-7s ratio %6s  %s%s%s", r.metric(), Row.sizeText(r.size()),
                Row.fmt(r.ours()), Row.fmt(r.c()), r.unit(), Row.fmt(r.ratio()), r.verdict(),
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
        List<Row> missed = rows.stream().filter(Row::missed).toList();
        md.append('\n').append(missed.isEmpty() ? "All targets met.\n" : "**Targets missed (" + missed.size()
                + "):** " + String.join("; ", missed.stream().map(r -> r.metric() + (r.size() > 0 ? " "
                + Row.sizeText(r.size()) : "") + " (ratio " + Row.fmt(r.ratio()) + ", target " + r.targetText()
                + ")").toList()) + ".\n");
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
