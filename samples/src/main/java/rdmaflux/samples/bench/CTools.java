package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs rdma-core's C tools for the comparison: the perftest programs ({@code ib_send_lat},
 * {@code ib_write_lat}, {@code ib_read_lat}, {@code ib_send_bw}, {@code ib_write_bw}) as a server and a
 * client on the same address with {@code -R} (connection manager), {@code cmtime}, and {@code mckey}
 * (a receiver and a sender); then parses their result tables, or for mckey, which prints no numbers,
 * times its output lines. Flags are those of the perftest 4.5 / rdma-core 44 generation. The perftest runs
 * that the classic rows compare with get {@code --use_old_post_send}, so they post with
 * {@code ibv_post_send} as our classic loops do on every device.
 */
final class CTools {
    /**
     * What one run produced: a value, or why there is none.
     *
     * @param value the measurement, NaN without one
     * @param error why there is none, or {@code null}
     * @param postApi the post API perftest says it used ({@code ibv_wr_*} or {@code ibv_post_send}), or
     *                {@code null} when it did not say (another tool, an older perftest)
     * @param cpuPerMessage the tool's processes' CPU time per message in microseconds, NaN when not measured
     *                      (see {@link #perftest} and {@link #mckey} for what it covers)
     */
    record Outcome(double value, String error, String postApi, double cpuPerMessage) {
        Outcome(double value, String error) {
            this(value, error, null, Double.NaN);
        }

        Outcome(double value, String error, String postApi) {
            this(value, error, postApi, Double.NaN);
        }

        static Outcome failed(String why) {
            return new Outcome(Double.NaN, why);
        }

        boolean ok() {
            return error == null;
        }
    }

    /** perftest's flag for its classic post path, {@code ibv_post_send}. */
    static final String OLD_POST_SEND = "--use_old_post_send";
    /** {@link Outcome#postApi} of a perftest run that used {@code ibv_wr_*}. */
    static final String WR_API = "ibv_wr_*";
    /** {@link Outcome#postApi} of a perftest run that used {@code ibv_post_send}. */
    static final String POST_SEND_API = "ibv_post_send";

    private final String device;
    private final String address;
    private final Duration timeout;
    private final Path work;
    private final boolean verbose;
    private final boolean pin;
    private int nextPort;

    /**
     * @param device RDMA device for {@code -d}
     * @param address the address servers listen on and clients connect to
     * @param basePort first port to use; every run takes a fresh one
     * @param timeout the longest one tool may run
     * @param verbose print the tools' full output
     * @param pin run servers on CPU 1 and clients on CPU 0 ({@code taskset}), as the Java loops are pinned
     */
    CTools(String device, String address, int basePort, Duration timeout, boolean verbose, boolean pin)
            throws IOException {
        this.pin = pin && installed("taskset");
        this.device = device;
        this.address = address;
        this.nextPort = basePort;
        this.timeout = timeout;
        this.verbose = verbose;
        this.work = Files.createTempDirectory("rdmaflux-bench");
    }

    /** {@return whether {@code tool} is on the PATH} */
    static boolean installed(String tool) {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String dir : path.split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /**
     * Runs a perftest latency tool and returns its {@code t_typical} (the median) in microseconds.
     *
     * @param tool e.g. {@code ib_send_lat}
     * @param size message size ({@code -s})
     * @param iters iterations ({@code -n})
     * @return the median latency, as the tool reports it (half a round trip for send and write)
     */
    Outcome latency(String tool, int size, int iters) {
        // #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
        return perftest(tool, size, iters, text -> parseRow(text, size, 9, 4), List.of(OLD_POST_SEND),
                tool.equals("ib_read_lat") ? 1 : 2);
    }

    /**
     * Runs a perftest bandwidth tool and returns its average bandwidth in bytes per second, computed
     * from the message rate column (Mpps, six decimals) times the size: the MB/s and Gbit/s columns keep
     * two decimals, which on an emulated device rounds small messages to 0.00, no measurement at all,
     * and is too coarse for a 5 % target. {@code -N} turns off the
     * per-message timestamps perftest takes for its peak column, so the C loop is as lean as ours.
     *
     * <p>{@code wrApi} picks perftest's post API: {@code false} passes {@code --use_old_post_send}
     * ({@code ibv_post_send}, what the classic rows compare with), {@code true} leaves perftest its default,
     * the {@code ibv_wr_*} API, which perftest 4.5 (up to at least 25.x) takes only on mlx5 and EFA
     * devices and replaces with {@code ibv_post_send} on every other one, Soft-RoCE included. The outcome
     * says which one it used, from its {@code ibv_wr* API} banner line.
     *
     * @param tool e.g. {@code ib_write_bw}
     * @param size message size ({@code -s})
     * @param iters messages ({@code -n})
     * @param wrApi whether to let perftest use its {@code ibv_wr_*} path
     * @return bytes per second
     */
    Outcome bandwidth(String tool, int size, int iters, boolean wrApi) {
        // #bytes #iterations BW_peak[MB/sec] BW_average[MB/sec] MsgRate[Mpps]
        return perftest(tool, size, iters, text -> bandwidthBytesPerSecond(text, size),
                wrApi ? List.of("-N") : List.of("-N", OLD_POST_SEND), 1);
    }

    /**
     * Reads which post API perftest used from its banner ({@code  ibv_wr* API     : ON}).
     *
     * @return {@code ibv_wr_*}, {@code ibv_post_send}, or {@code null} when the banner has no such line
     */
    static String postApi(String text) {
        for (String line : text.split("\n")) {
            String t = line.trim();
            if (t.startsWith("ibv_wr* API")) {
                return t.endsWith("ON") ? WR_API : t.endsWith("OFF") ? POST_SEND_API : null;
            }
        }
        return null;
    }

    /** perftest's smallest {@code -n}: the CPU baseline run's iterations. */
    static final int BASELINE_ITERS = 5;
    /** CPU microseconds of a {@link #BASELINE_ITERS} run of both processes, per tool, size and flags. */
    private final Map<String, Long> cpuBaselines = new java.util.HashMap<>();

    /**
     * One perftest comparison run, and the CPU time per message of its two processes: both run under
     * {@link CpuTime#wrap}, so their user + system time over their whole lives is what {@code wait4}
     * reported for them. That includes what every run costs whatever its length (process start, device
     * open, memory registration, connection setup, teardown), which perftest does outside its timed loop
     * as ours does; so the same tool, size and flags run once more with {@link #BASELINE_ITERS} iterations
     * (once per combination), and the per-message CPU is (CPU(n) - CPU(baseline)) / (messages(n) -
     * messages(baseline)): the marginal cost of a message, with the fixed cost taken out.
     */
    private Outcome perftest(String tool, int size, int iters, java.util.function.ToDoubleFunction<String> parse,
                             List<String> extra, int messagesPerIter) {
        Outcome o = perftestOnce(tool, size, iters, parse, extra);
        if (!o.ok() || iters <= BASELINE_ITERS || Double.isNaN(o.cpuPerMessage())) {
            return new Outcome(o.value(), o.error(), o.postApi(), Double.NaN);
        }
        String key = tool + " " + size + " " + extra;
        Long base = cpuBaselines.get(key);
        if (base == null) {
            Outcome b = perftestOnce(tool, size, BASELINE_ITERS, parse, extra);
            base = b.ok() && !Double.isNaN(b.cpuPerMessage()) ? (long) b.cpuPerMessage() : -1L;
            cpuBaselines.put(key, base);
        }
        double cpu = base < 0 ? Double.NaN
                : (o.cpuPerMessage() - base) / ((double) messagesPerIter * (iters - BASELINE_ITERS));
        return new Outcome(o.value(), o.error(), o.postApi(), cpu);
    }

    /** One run; {@link Outcome#cpuPerMessage} holds both processes' total CPU microseconds (NaN if unknown). */
    private Outcome perftestOnce(String tool, int size, int iters, java.util.function.ToDoubleFunction<String> parse,
                                 List<String> extra) {
        if (!installed(tool)) {
            return Outcome.failed(tool + " is not installed (Debian package perftest)");
        }
        String last = null;
        for (int attempt = 1; attempt <= 3; attempt++) {
            int port = nextPort++;
            List<String> args = new ArrayList<>(List.of(tool, "-R", "-F", "-d", device, "-p", Integer.toString(port),
                    "-s", Integer.toString(size), "-n", Integer.toString(iters)));
            args.addAll(extra);
            Process server = null;
            try {
                Path serverOut = work.resolve(tool + "-" + port + "-server.txt");
                // Line-buffered, so its banner reaches the file while it waits (stdio buffers files fully).
                Path serverCpu = work.resolve(tool + "-" + port + "-server.cpu");
                server = start(cpuTimed(onCpu(1, lineBuffered(args)), serverCpu), serverOut);
                if (!awaitOutput(server, serverOut, "Waiting for client", Duration.ofSeconds(20))
                        && !server.isAlive()) {
                    last = tool + " server exited with " + server.exitValue() + ": " + tail(serverOut);
                    continue;
                }
                // The banner comes just before rdma_listen; give the server a moment to get there.
                Thread.sleep(500);
                List<String> clientArgs = new ArrayList<>(args);
                clientArgs.add(address);
                Path clientOut = work.resolve(tool + "-" + port + "-client.txt");
                Path clientCpu = work.resolve(tool + "-" + port + "-client.cpu");
                Process client = start(cpuTimed(onCpu(0, clientArgs), clientCpu), clientOut);
                if (!client.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    // SIGTERM first: the CPU wrapper passes it on to the tool, a SIGKILL would orphan it.
                    client.destroy();
                    if (!client.waitFor(5, TimeUnit.SECONDS)) {
                        client.destroyForcibly();
                    }
                    last = tool + " client did not finish within " + timeout;
                    continue;
                }
                String text = Files.readString(clientOut);
                if (verbose) {
                    System.out.print(text);
                }
                double v = parse.applyAsDouble(text);
                // perftest prints 0.00 when a run went wrong without failing; that is no measurement.
                if (client.exitValue() != 0 || Double.isNaN(v) || v <= 0) {
                    last = tool + " client exited with " + client.exitValue() + ": " + tail(clientOut);
                    continue;
                }
                boolean serverDone = server.waitFor(10, TimeUnit.SECONDS);
                long cpuServer = serverDone ? CpuTime.childMicros(serverCpu) : -1;
                long cpuClient = CpuTime.childMicros(clientCpu);
                return new Outcome(v, null, postApi(text), cpuServer < 0 || cpuClient < 0 ? Double.NaN
                        : cpuServer + cpuClient);
            } catch (IOException e) {
                last = "cannot run " + tool + ": " + e.getMessage();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Outcome.failed("interrupted");
            } finally {
                if (server != null) {
                    server.destroy();
                }
            }
        }
        return Outcome.failed(last);
    }

    /**
     * Reads a perftest bandwidth report's average in bytes per second from whichever column keeps more
     * digits: BW average (MiB/s, two decimals) for fast runs, the message rate (Mpps, six decimals) times
     * the size for slow ones, where the MiB/s column rounds to a few hundredths or to 0.00.
     */
    static double bandwidthBytesPerSecond(String text, long size) {
        double mib = parseRow(text, size, 5, 3);
        double mpps = parseRow(text, size, 5, 4);
        if (!Double.isNaN(mib) && mib >= 100) {
            return mib * 1024 * 1024;
        }
        return mpps * 1e6 * size;
    }

    /** Finds the result line of {@code size} and returns one column, NaN if absent. */
    static double parseRow(String text, long size, int columns, int column) {
        for (String line : text.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= columns && f[0].equals(Long.toString(size))) {
                try {
                    return Double.parseDouble(f[column]);
                } catch (NumberFormatException e) {
                    // a banner line that happens to start with the number; keep looking
                }
            }
        }
        return Double.NaN;
    }

    /**
     * Runs cmtime: its server ({@code cmtime -p PORT}, which serves until stopped) and its client for
     * {@code connections} connections, and parses the client's step table.
     *
     * @param connections how many ({@code -c})
     * @return step → total milliseconds, or the error
     */
    Map<ConnectionRate.Step, Double> cmtime(int connections, StringBuilder error) {
        if (!installed("cmtime")) {
            error.append("cmtime is not installed (Debian package rdmacm-utils)");
            return Map.of();
        }
        String last = null;
        for (int attempt = 1; attempt <= 3; attempt++) {
            int port = nextPort++;
            Process server = null;
            try {
                server = start(List.of("cmtime", "-p", Integer.toString(port)), work.resolve("cmtime-" + port
                        + "-server.txt"));
                Thread.sleep(1000); // cmtime's server prints nothing when it is ready
                Path out = work.resolve("cmtime-" + port + "-client.txt");
                Process client = start(List.of("cmtime", "-s", address, "-p", Integer.toString(port), "-c",
                        Integer.toString(connections)), out);
                if (!client.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    client.destroyForcibly();
                    last = "cmtime client did not finish within " + timeout;
                    continue;
                }
                String text = Files.readString(out);
                if (verbose) {
                    System.out.print(text);
                }
                Map<ConnectionRate.Step, Double> totals = parseCmtime(text);
                if (client.exitValue() != 0 || totals.size() != ConnectionRate.Step.values().length) {
                    last = "cmtime client exited with " + client.exitValue() + ": " + tail(out);
                    continue;
                }
                return totals;
            } catch (IOException e) {
                last = "cannot run cmtime: " + e.getMessage();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                last = "interrupted";
                break;
            } finally {
                if (server != null) {
                    server.destroy();
                }
            }
        }
        error.append(last);
        return Map.of();
    }

    /**
     * One mckey run: the rate at which the receiver got the datagrams, or why there is none.
     *
     * @param datagramsPerSecond datagrams received / (sender's first post .. receiver's last completion), NaN
     *                           without a measurement
     * @param received datagrams the receiver got (all of them when it finished; otherwise the device's
     *                 {@code rdma_recvs} count over the run, -1 when the device has no such counter)
     * @param error why there is no rate, or {@code null}
     * @param cpuPerDatagram both processes' CPU microseconds per datagram from the sender's first post on
     *                       (see {@link #mckey}), NaN when not measured
     */
    record Mckey(double datagramsPerSecond, long received, String error, double cpuPerDatagram) {
        Mckey(double datagramsPerSecond, long received, String error) {
            this(datagramsPerSecond, received, error, Double.NaN);
        }

        boolean ok() {
            return error == null;
        }
    }

    /**
     * Runs mckey as a receiver ({@code mckey -m GROUP -b ADDR -C N -S S}, on CPU 1) and, once it has joined,
     * as a send-only sender ({@code ... -s -o}, on CPU 0), and times the transfer from their output: mckey
     * prints {@code initiating data transfers} just before the sender's first post and {@code data transfers
     * complete} just after the receiver's last completion. Both run line-buffered ({@code stdbuf -oL}) into
     * pipes read by one thread each, which timestamps every line as it arrives.
     *
     * <p>mckey's receiver posts exactly {@code count} receives and exits only when all arrived; when some are
     * lost it would wait forever, so it is stopped a few seconds after the sender finished, and the run has no
     * rate (the device counters say how many arrived).
     *
     * <p>CPU time: both run under {@link CpuTime#wrap}. When the sender's {@code initiating data transfers}
     * line arrives, each process's CPU so far is read from {@code /proc/PID/stat} (10 ms ticks): the
     * receiver has been spinning on its CQ since its own 3 s pause ended, which depends on how long the
     * sender took to start, so its whole-life CPU would measure that wait. The CPU per datagram is both
     * processes' totals at exit ({@code wait4}) minus those snapshots, over {@code count}: the transfer plus
     * their teardown (leave the group, free, exit), which ours, stopped at the last datagram, leaves out.
     *
     * @param group the multicast group
     * @param count datagrams ({@code -C})
     * @param size bytes per datagram ({@code -S}), at most the port's active MTU
     */
    Mckey mckey(String group, int count, int size) {
        if (!installed("mckey")) {
            return new Mckey(Double.NaN, 0, "mckey is not installed (Debian package rdmacm-utils)");
        }
        if (!installed("stdbuf")) {
            return new Mckey(Double.NaN, 0, "stdbuf (coreutils) is needed to time mckey from its output");
        }
        List<String> args = List.of("mckey", "-m", group, "-b", address, "-C", Integer.toString(count), "-S",
                Integer.toString(size));
        List<String> senderArgs = new ArrayList<>(args);
        senderArgs.addAll(List.of("-s", "-o"));
        int run = nextPort++; // only to name the output files
        long recvs0 = PortCounters.read(device, PortCounters.RDMA_RECVS);
        Path receiverCpu = work.resolve("mckey-" + run + "-receiver.cpu");
        Path senderCpu = work.resolve("mckey-" + run + "-sender.cpu");
        long[] atStart = {-1, -1}; // receiver, sender: CPU microseconds when the sender began
        Mckey result = mckeyRun(args, senderArgs, run, count, recvs0, receiverCpu, senderCpu, atStart);
        if (!result.ok() || atStart[0] < 0 || atStart[1] < 0) {
            return result;
        }
        long r = CpuTime.childMicros(receiverCpu);
        long s = CpuTime.childMicros(senderCpu);
        double cpu = r < 0 || s < 0 ? Double.NaN : (double) (r - atStart[0] + s - atStart[1]) / count;
        return new Mckey(result.datagramsPerSecond(), result.received(), null, cpu);
    }

    private Mckey mckeyRun(List<String> args, List<String> senderArgs, int run, int count, long recvs0,
                           Path receiverCpu, Path senderCpu, long[] atStart) {
        try (Watched receiver = Watched.start(cpuTimed(onCpu(1, lineBuffered(args)), receiverCpu),
                work.resolve("mckey-" + run + "-receiver.txt"))) {
            // It posts its receives before it joins: once it says so, nothing sent can find it unready.
            if (receiver.await("mckey: joined", System.nanoTime() + Duration.ofSeconds(20).toNanos()) < 0) {
                return new Mckey(Double.NaN, 0, "mckey receiver did not join: " + tail(receiver.file));
            }
            try (Watched sender = Watched.start(cpuTimed(onCpu(0, lineBuffered(senderArgs)), senderCpu),
                    work.resolve("mckey-" + run + "-sender.txt"))) {
                long deadline = System.nanoTime() + timeout.toNanos();
                long t0 = sender.await("initiating data transfers", deadline);
                if (t0 >= 0) {
                    long rp = CpuTime.pid(receiverCpu);
                    long sp = CpuTime.pid(senderCpu);
                    atStart[0] = rp < 0 ? -1 : CpuTime.stat(rp);
                    atStart[1] = sp < 0 ? -1 : CpuTime.stat(sp);
                }
                if (t0 < 0) {
                    return new Mckey(Double.NaN, 0, "mckey sender did not start sending: " + tail(sender.file));
                }
                long sent = sender.await("data transfers complete", deadline);
                // After the sender's last post only what is already on its way can still arrive.
                long grace = Math.max(System.nanoTime(), sent) + Duration.ofSeconds(5).toNanos();
                long t1 = receiver.await("data transfers complete", Math.min(deadline + Duration.ofSeconds(5)
                        .toNanos(), grace));
                if (verbose) {
                    System.out.print(Files.readString(receiver.file) + Files.readString(sender.file));
                }
                if (t1 < 0) {
                    long got = recvs0 < 0 ? -1 : PortCounters.read(device, PortCounters.RDMA_RECVS) - recvs0;
                    return new Mckey(Double.NaN, got, "mckey receiver got " + (got < 0 ? "fewer than " + count
                            : got + " of " + count) + " datagrams (" + (sent < 0 ? "sender did not finish: "
                            + tail(sender.file) : "UD loss") + "); no end time");
                }
                return new Mckey(count * 1e9 / (t1 - t0), count, null);
            }
        } catch (IOException e) {
            return new Mckey(Double.NaN, 0, "cannot run mckey: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Mckey(Double.NaN, 0, "interrupted");
        }
    }

    /**
     * A child process whose output lines are timestamped ({@link System#nanoTime()}) as they arrive, by a
     * thread blocked on the pipe, and copied to a file.
     */
    static final class Watched implements AutoCloseable {
        private final Process process;
        final Path file;
        private final List<String> lines = new ArrayList<>();
        private final List<Long> stamps = new ArrayList<>();
        private boolean ended;
        private Thread reader;

        private Watched(Process process, Path file) {
            this.process = process;
            this.file = file;
        }

        static Watched start(List<String> command, Path file) throws IOException {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            Watched w = new Watched(p, file);
            w.reader = Thread.ofPlatform().daemon().name("bench-watch-" + file.getFileName()).start(w::read);
            return w;
        }

        private void read() {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8)); Writer out = Files.newBufferedWriter(file)) {
                String line;
                while ((line = in.readLine()) != null) {
                    long now = System.nanoTime();
                    synchronized (this) {
                        lines.add(line);
                        stamps.add(now);
                        notifyAll();
                    }
                    out.write(line);
                    out.write('\n');
                    out.flush();
                }
            } catch (IOException e) {
                // the process went away; what was read stays
            } finally {
                synchronized (this) {
                    ended = true;
                    notifyAll();
                }
            }
        }

        /**
         * @param marker text a line must contain
         * @param deadline {@link System#nanoTime()} to give up at
         * @return when the first such line arrived, or -1 if none did before the deadline or the output ended
         */
        synchronized long await(String marker, long deadline) throws InterruptedException {
            for (int seen = 0;;) {
                for (; seen < lines.size(); seen++) {
                    if (lines.get(seen).contains(marker)) {
                        return stamps.get(seen);
                    }
                }
                long left = deadline - System.nanoTime();
                if (ended || left <= 0) {
                    return -1;
                }
                wait(Math.max(1, left / 1_000_000));
            }
        }

        @Override
        public void close() throws InterruptedException {
            // Let it leave the group and exit by itself; stop it only when it hangs (a receiver short of datagrams).
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            }
            // Its last lines reach the file once the reader has seen the end of the output.
            reader.join(5000);
        }
    }

    /** Parses cmtime's {@code step: total_ms max_ms min_us us_per_conn} lines. */
    static Map<ConnectionRate.Step, Double> parseCmtime(String text) {
        Map<ConnectionRate.Step, Double> totals = new EnumMap<>(ConnectionRate.Step.class);
        for (String line : text.split("\n")) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = line.substring(0, colon).trim();
            String[] f = line.substring(colon + 1).trim().split("\\s+");
            for (ConnectionRate.Step s : ConnectionRate.Step.values()) {
                if (s.label.equals(name) && f.length >= 4) {
                    try {
                        totals.put(s, Double.parseDouble(f[0]));
                    } catch (NumberFormatException e) {
                        // not the table
                    }
                }
            }
        }
        return totals;
    }

    /** {@return {@code command} under {@link CpuTime#wrap} writing to {@code cpuFile}, or as is without bash} */
    private static List<String> cpuTimed(List<String> command, Path cpuFile) {
        return CpuTime.canWrap() ? CpuTime.wrap(command, cpuFile) : command;
    }

    static Process start(List<String> command, Path output) throws IOException {
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
    }

    private List<String> onCpu(int cpu, List<String> command) {
        if (!pin) {
            return command;
        }
        List<String> c = new ArrayList<>(List.of("taskset", "-c", Integer.toString(cpu)));
        c.addAll(command);
        return c;
    }

    static List<String> lineBuffered(List<String> command) {
        if (!installed("stdbuf")) {
            return command;
        }
        List<String> c = new ArrayList<>(List.of("stdbuf", "-oL"));
        c.addAll(command);
        return c;
    }

    static boolean awaitOutput(Process p, Path file, String marker, Duration wait)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (System.nanoTime() < deadline) {
            if (Files.exists(file) && Files.readString(file).contains(marker)) {
                return true;
            }
            if (!p.isAlive()) {
                return false;
            }
            Thread.sleep(50);
        }
        return false;
    }

    static String tail(Path file) {
        try {
            String t = Files.readString(file).strip();
            String[] lines = t.split("\n");
            return String.join(" | ", List.of(lines).subList(Math.max(0, lines.length - 3), lines.length));
        } catch (IOException e) {
            return "(no output)";
        }
    }
}
