package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaDevice;

/**
 * The latency rows of {@link Bench} across two hosts: every server side (our verbs-layer ends, our reactive
 * echo server, perftest's servers) runs on the first host, every client side on the second, so each round
 * trip crosses the wire. Under qemu's TCG a single VM's two virtual CPUs share one emulator thread and its
 * scheduling tick quantizes a ping-pong; two VMs each have their own.
 *
 * <p>The same program runs on both hosts ({@code scripts/bench --hosts 2} starts it in each VM of
 * {@code scripts/sandbox/hosts}); {@code RDMAFLUX_SANDBOX_HOST} or {@code --role} picks the part. The client
 * drives: over a TCP control connection it asks the server for one server side at a time, waits for it to
 * listen, and runs the matching client. Rows, statistic (perftest's {@code t_typical}, ours computed the same
 * way), {@code -n}, repeats (ours and C alternating, medians) and targets are those of {@link Bench}.
 */
@Command(name = "bench-hosts", mixinStandardHelpOptions = true,
        description = "Latency of rdmaflux vs perftest with the server on one host and the client on another.")
public final class CrossHostBench implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public CrossHostBench() {
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--role", description = "server or client (default: server on $RDMAFLUX_SANDBOX_HOST 1, "
            + "client on 2).")
    String role;

    @Option(names = "--server", description = "The server host's RDMA address (default: the first of "
            + "$RDMAFLUX_HOSTS_ADDRS).")
    String serverAddress;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEVICE", description = "RDMA device (default: "
            + "$RDMAFLUX_SANDBOX_DEVICE, else the first).")
    String device = System.getenv("RDMAFLUX_SANDBOX_DEVICE");

    @Option(names = "--quick", description = "A short run (2 B only, one repeat, few iterations).")
    boolean quick;

    @Option(names = {"-o", "--out"}, paramLabel = "DIR", description = "The client writes results.md to DIR.")
    Path out;

    @Option(names = {"-p", "--port"}, description = "The control port; RDMA ports follow it (default: "
            + "${DEFAULT-VALUE}).")
    int basePort = 19500;

    @Option(names = "--lat-iters", description = "Timed iterations per test, ours and perftest's -n (default: 300, "
            + "quick 30).")
    Integer latIters;

    @Option(names = {"-r", "--repeat"}, description = "Pairs of runs of each comparison, ours and C alternating; "
            + "medians and the ratio's 95 %% interval, which takes at least " + Verdict.MIN_PAIRS + " (default: "
            + Verdict.MIN_PAIRS + ", quick 1).")
    Integer repeatOption;

    @Option(names = "--timeout", description = "Seconds any single wait may take (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds = 60;

    @Option(names = "--command", hidden = true, description = "The command line to record in results.md.")
    String command;

    private PrintWriter pw;
    private Duration timeout;

    /**
     * Runs one part of the benchmark.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new CrossHostBench()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        pw = spec.commandLine().getOut();
        timeout = Duration.ofSeconds(timeoutSeconds);
        if (!Rdma.isAvailable()) {
            spec.commandLine().getErr().println("bench: RDMA is not available: "
                    + Rdma.unavailabilityCause().getMessage());
            return 2;
        }
        if (device == null) {
            device = Rdma.devices().stream().map(RdmaDevice::name).findFirst().orElseThrow();
        }
        if (serverAddress == null) {
            String all = System.getenv().getOrDefault("RDMAFLUX_HOSTS_ADDRS", "").trim();
            serverAddress = all.isEmpty() ? null : all.split("\\s+")[0];
        }
        if (role == null) {
            String host = System.getenv().getOrDefault("RDMAFLUX_SANDBOX_HOST", "").trim();
            role = switch (host) {
                case "1" -> "server";
                case "2" -> "client";
                default -> null;
            };
        }
        if (serverAddress == null || role == null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "outside scripts/sandbox/hosts --role and "
                    + "--server are required");
        }
        InetAddress server = InetAddress.getByName(serverAddress);
        return switch (role) {
            case "server" -> serve(server);
            case "client" -> drive(server);
            default -> throw new CommandLine.ParameterException(spec.commandLine(), "--role: server or client");
        };
    }

    // ---- server (host 1) ----

    /**
     * Serves the client's requests, one line each, answered with {@code ready} once the server side listens
     * and {@code done} (for ours, {@code done MS}: this JVM's JIT time during the timed rounds) or
     * {@code error: ...} once it finished: {@code ours TEST SIZE WARMUP ITERS PORT},
     * {@code reactive SIZE PORT MODE WARMUP ITERS} (an echo server with {@link CrossHostRows.Mode}'s options,
     * until {@code stop}; {@code done MS}: the JIT's time while it echoed the timed messages),
     * {@code perftest TOOL SIZE ITERS PORT [-e]}, {@code quit}.
     */
    private int serve(InetAddress self) throws IOException, InterruptedException {
        try (ServerSocket control = new ServerSocket()) {
            control.setReuseAddress(true);
            control.bind(new InetSocketAddress(self, basePort));
            control.setSoTimeout((int) Duration.ofMinutes(10).toMillis());
            say("bench: server on %s, waiting for the client on port %d", self.getHostAddress(), basePort);
            try (Socket s = control.accept();
                 BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                         StandardCharsets.UTF_8));
                 PrintWriter reply = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8)) {
                boolean failed = false;
                for (String line; (line = in.readLine()) != null; ) {
                    String[] f = line.trim().split("\\s+");
                    if (f[0].equals("quit")) {
                        return failed ? 1 : 0;
                    }
                    try {
                        reply.println(serveOne(self, f, in, reply));
                    } catch (RuntimeException e) {
                        // A perftest server's failure is the C side's, which the client's table reports.
                        failed |= !f[0].equals("perftest");
                        say("bench: server side of '%s' failed: %s", line, e);
                        reply.println("error: " + e.getMessage());
                    }
                }
                say("bench: the client went away without quit");
                return 1;
            }
        }
    }

    private String serveOne(InetAddress self, String[] f, BufferedReader in, PrintWriter reply)
            throws IOException, InterruptedException {
        // A quiet JIT on this host too before every run of either side, as the client waits for its own.
        CrossHostJit.awaitQuiet(quick, this::say);
        switch (f[0]) {
            case "ours" -> {
                HostLatency.Test test = HostLatency.Test.valueOf(f[1]);
                int size = Integer.parseInt(f[2]);
                int warmup = Integer.parseInt(f[3]);
                int iters = Integer.parseInt(f[4]);
                long compiled;
                try (HostLatency.Listener l = new HostLatency.Listener(new InetSocketAddress(self,
                        Integer.parseInt(f[5])), timeout)) {
                    reply.println("ready");
                    try (HostLatency end = l.accept(HostLatency.MAX_SIZE)) {
                        compiled = end.serve(test, size, warmup, iters);
                    }
                }
                // The client's warm-up goes on until this side's JIT stays idle through a run.
                return "done " + compiled;
            }
            case "reactive" -> {
                int size = Integer.parseInt(f[1]);
                long warmup = Long.parseLong(f[4]);
                long timed = warmup + Long.parseLong(f[5]);
                // This JVM's JIT time while it answered the timed round trips: from the first timed message on.
                java.util.concurrent.atomic.AtomicLongArray jit = new java.util.concurrent.atomic.AtomicLongArray(2);
                try (ReactiveLatency.Echo echo = new ReactiveLatency.Echo(new InetSocketAddress(self,
                        Integer.parseInt(f[2])), CrossHostRows.Mode.valueOf(f[3]).options(size), timeout, n -> {
                            if (n == warmup + 1) {
                                jit.set(0, CrossHostJit.millis());
                            } else if (n == timed) {
                                jit.set(1, CrossHostJit.millis() - jit.get(0));
                            }
                        })) {
                    reply.println("ready");
                    String stop = in.readLine();
                    if (!"stop".equals(stop)) {
                        throw new IllegalStateException("expected stop, got " + stop);
                    }
                }
                return "done " + jit.get(1);
            }
            case "perftest" -> {
                return perftestServer(f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]),
                        f.length > 5 && f[5].equals("-e"), reply);
            }
            default -> throw new IllegalArgumentException("unknown request " + String.join(" ", f));
        }
    }

    private String perftestServer(String tool, int size, int iters, int port, boolean events, PrintWriter reply)
            throws IOException, InterruptedException {
        if (!CTools.installed(tool)) {
            throw new IllegalStateException(tool + " is not installed (Debian package perftest)");
        }
        Path log = Files.createTempFile(tool + "-" + port + "-server", ".txt");
        List<String> args = perftestArgs(tool, size, iters, port);
        if (events) {
            args.add("-e");
        }
        Process p = CTools.start(CTools.lineBuffered(args), log);
        try {
            if (!CTools.awaitOutput(p, log, "Waiting for client", Duration.ofSeconds(20))) {
                throw new IllegalStateException(tool + " server did not start: " + CTools.tail(log));
            }
            if (!CTools.awaitListening(p, port, Duration.ofSeconds(20))) {
                throw new IllegalStateException(tool + " server did not listen on port " + port + ": "
                        + CTools.tail(log));
            }
            reply.println("ready");
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(tool + " server did not finish within " + timeout);
            }
            return p.exitValue() == 0 ? "done" : "error: " + tool + " server exited with " + p.exitValue() + ": "
                    + CTools.tail(log);
        } finally {
            p.destroy();
        }
    }

    private List<String> perftestArgs(String tool, int size, int iters, int port) {
        return new ArrayList<>(List.of(tool, "-R", "-F", "-d", device, "-p", Integer.toString(port), "-s",
                Integer.toString(size), "-n", Integer.toString(iters), CTools.OLD_POST_SEND));
    }

    private void say(String format, Object... args) {
        pw.println(String.format(format, args));
        pw.flush();
    }

    // ---- client (host 2) ----

    private int drive(InetAddress server) throws IOException, InterruptedException {
        int iters = latIters != null ? latIters : quick ? 30 : 300;
        int repeat = repeatOption != null ? Math.max(1, repeatOption) : quick ? 1 : Verdict.MIN_PAIRS;
        if (iters < 5) {
            throw new CommandLine.ParameterException(spec.commandLine(), "perftest needs --lat-iters >= 5");
        }
        Instant started = Instant.now();
        say("bench: client on %s, servers on %s (%s), kernel %s, %s %s, %d CPUs", System.getenv()
                .getOrDefault("RDMAFLUX_SANDBOX_ADDR", "this host"), server.getHostAddress(), device,
                System.getProperty("os.version"), System.getProperty("java.vm.name"), Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        try (CrossHostControl control = CrossHostControl.connect(new InetSocketAddress(server, basePort), timeout)) {
            CrossHostRows rows = new CrossHostRows(control, server, device, basePort + 1, timeout, quick, this::say);
            List<Row> table = rows.all(quick ? new int[] {2} : new int[] {2, 4096}, iters, repeat);
            control.request("quit", false);
            report(table, started, server);
            return rows.ourFailure() ? 1 : 0;
        }
    }

    private void report(List<Row> rows, Instant started, InetAddress server) throws IOException {
        pw.println();
        pw.print(Table.text(rows));
        String verdict = Table.summary(rows);
        pw.println();
        pw.println("bench: " + verdict.replace("**", ""));
        pw.printf("bench: finished in %.0f s%n", Duration.between(started, Instant.now()).toMillis() / 1000.0);
        pw.flush();
        if (out == null) {
            return;
        }
        Files.createDirectories(out);
        String env = System.getenv("RDMAFLUX_SANDBOX_INSIDE") != null
                ? "two Soft-RoCE sandbox VMs on one virtual wire (qemu TCG, one emulated CPU each)" : "two hosts";
        StringBuilder md = new StringBuilder();
        md.append("Run ").append(started.truncatedTo(ChronoUnit.SECONDS)).append(quick ? " (quick)" : "")
                .append(" on `").append(device).append("` across ").append(env).append(": servers on ")
                .append(server.getHostAddress()).append(", clients on ")
                .append(System.getenv().getOrDefault("RDMAFLUX_SANDBOX_ADDR", "the other host")).append(".\n\n");
        if (command != null) {
            md.append("Command: `").append(command).append("`\n\n");
        }
        md.append("Kernel ").append(System.getProperty("os.version")).append(", ")
                .append(System.getProperty("java.vm.name")).append(' ').append(Runtime.version())
                .append(", JVM options `")
                .append(String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments())).append("`.\n\n");
        md.append(Table.markdown(rows)).append('\n').append(verdict).append('\n');
        Files.writeString(out.resolve("results.md"), md);
        say("bench: wrote %s", out.resolve("results.md"));
    }

}
