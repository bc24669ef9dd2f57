package rdmaflux.samples.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import rdmaflux.cm.PortCounters;

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

    /** The pause after a server's start where its listen cannot be seen ({@link #awaitListening}). */
    static final Duration LISTEN_PAUSE = Duration.ofMillis(500);

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
        int perIter = tool.equals("ib_read_lat") ? 1 : 2;
        // t_avg is per one-way hop for the ping-pongs (perftest halves the round trip), per READ for reads.
        return perftest(tool, size, iters, text -> ToolOutput.parseRow(text, size, 9, 4), List.of(OLD_POST_SEND),
                perIter, text -> ToolOutput.parseRow(text, size, 9, 5) * perIter * iters / 1e6);
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
        return perftest(tool, size, iters, text -> ToolOutput.bandwidthBytesPerSecond(text, size),
                wrApi ? List.of("-N") : List.of("-N", OLD_POST_SEND), 1,
                text -> iters / (ToolOutput.parseRow(text, size, 5, 4) * 1e6));
    }

    /**
     * One perftest comparison run, and the CPU time per message of its two processes over perftest's own
     * timed part. The client runs line-buffered into a pipe ({@link WatchedProcess}); perftest prints its result
     * table's header just before its measurement loop and the result line just after it, and at each of
     * those two lines both processes' CPU time so far is read ({@link CpuTime#snapshot}: the run time the
     * scheduler charged to each of their threads), by the thread that reads the pipe, as soon as it has
     * read the line. Process start, device open, registration, connection setup and teardown stay outside,
     * as they do for ours; inside is also what perftest does between the header and its loop (posting its
     * receives, a handshake in which both sides spin on a CQ until the other arrives, which under the
     * emulator can take longer than a short loop) and after it. So the value is the two processes' CPU load
     * over that bracket (CPU time / the bracket's wall time, from the pipe's stamps) times the time
     * perftest itself reports for its loop ({@code t_avg} x iterations for the latency tools, messages /
     * {@code MsgRate} for the bandwidth tools), per message. A run in which a process was gone by its
     * second snapshot has no CPU value.
     */
    private Outcome perftest(String tool, int size, int iters, java.util.function.ToDoubleFunction<String> parse,
                             List<String> extra, int messagesPerIter,
                             java.util.function.ToDoubleFunction<String> loopSeconds) {
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
                server = start(onCpu(1, lineBuffered(args)), serverOut);
                if (!awaitOutput(server, serverOut, "Waiting for client", Duration.ofSeconds(20))
                        && !server.isAlive()) {
                    last = tool + " server exited with " + server.exitValue() + ": " + tail(serverOut);
                    continue;
                }
                if (!awaitListening(server, port, Duration.ofSeconds(20))) {
                    last = tool + " server did not listen on port " + port + ": " + tail(serverOut);
                    continue;
                }
                List<String> clientArgs = new ArrayList<>(args);
                clientArgs.add(address);
                Path clientOut = work.resolve(tool + "-" + port + "-client.txt");
                long[] before = {-1, -1};
                long[] after = {-1, -1};
                int exit;
                long bracketNanos;
                // taskset and stdbuf exec the tool: the process ids are the tools' own.
                long sp = server.pid();
                long[] cp = {-1};
                try (WatchedProcess client = WatchedProcess.start(onCpu(0, lineBuffered(clientArgs)), clientOut, l -> {
                    // On the reader thread, the moment the line is read: as close to the line as this
                    // process can take the snapshot.
                    if (before[0] < 0 && l.contains("#bytes")) {
                        before[0] = CpuTime.snapshot(sp);
                        before[1] = CpuTime.snapshot(cp[0]);
                    } else if (before[0] >= 0 && after[0] < 0 && ToolOutput.isResultLine(l, size)) {
                        after[0] = CpuTime.snapshot(sp);
                        after[1] = CpuTime.snapshot(cp[0]);
                    }
                }, cp)) {
                    long deadline = System.nanoTime() + timeout.toNanos();
                    if (!client.waitFor(deadline)) {
                        last = tool + " client did not finish within " + timeout;
                        continue; // closing the WatchedProcess stops it
                    }
                    exit = client.process.exitValue();
                    long h = client.awaitLine(l -> l.contains("#bytes"), 0);
                    long r = client.awaitLine(l -> ToolOutput.isResultLine(l, size), 0);
                    bracketNanos = h < 0 || r < 0 ? -1 : r - h;
                }
                String text = Files.readString(clientOut);
                if (verbose) {
                    System.out.print(text);
                }
                double v = parse.applyAsDouble(text);
                // perftest prints 0.00 when a run went wrong without failing; that is no measurement.
                if (exit != 0 || Double.isNaN(v) || v <= 0) {
                    last = tool + " client exited with " + exit + ": " + tail(clientOut);
                    continue;
                }
                server.waitFor(10, TimeUnit.SECONDS);
                // A process gone before its second snapshot leaves the run out of the CPU column.
                double cpu = Double.NaN;
                double loop = loopSeconds.applyAsDouble(text);
                if (before[0] >= 0 && before[1] >= 0 && after[0] >= 0 && after[1] >= 0 && bracketNanos > 0
                        && loop > 0) {
                    // The processes' CPU load over the bracket (CPU seconds per second) times perftest's own
                    // time for its loop; the bracket is never shorter than the loop.
                    double load = (after[0] - before[0] + after[1] - before[1]) / (bracketNanos / 1e3);
                    double seconds = Math.min(loop, bracketNanos / 1e9);
                    cpu = load * seconds * 1e6 / ((long) messagesPerIter * iters);
                }
                return new Outcome(v, null, ToolOutput.postApi(text), cpu);
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
     * Runs cmtime: its server ({@code cmtime -p PORT}, which serves until stopped) and its client for
     * {@code connections} connections, and parses the client's step table.
     *
     * @param connections how many ({@code -c})
     * @return step → total milliseconds, or the error
     */
    Map<ConnectionRate.Step, Double> cmtime(int connections, StringBuilder error) {
        return cmtime(connections, error, timeout);
    }

    /**
     * {@link #cmtime(int, StringBuilder)} with a longer wait for the client: setting up and tearing down
     * 10,000 connections takes cmtime about a minute under the emulator.
     *
     * @param connections how many
     * @param error where a failure is described
     * @param clientTimeout the longest one client run may take
     * @return the step totals, or none with {@code error} set
     */
    Map<ConnectionRate.Step, Double> cmtime(int connections, StringBuilder error, Duration clientTimeout) {
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
                if (!awaitListening(server, port, Duration.ofSeconds(20))) {
                    last = "cmtime server did not listen on port " + port;
                    continue;
                }
                Path out = work.resolve("cmtime-" + port + "-client.txt");
                Process client = start(List.of("cmtime", "-s", address, "-p", Integer.toString(port), "-c",
                        Integer.toString(connections)), out);
                if (!client.waitFor(clientTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    client.destroyForcibly();
                    last = "cmtime client did not finish within " + clientTimeout;
                    continue;
                }
                String text = Files.readString(out);
                if (verbose) {
                    System.out.print(text);
                }
                Map<ConnectionRate.Step, Double> totals = ToolOutput.parseCmtime(text);
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
     * <p>CPU time: when the sender's {@code initiating data transfers} line is read, both processes' CPU so
     * far is taken ({@link CpuTime#snapshot}, by the reader thread, at once), and each one's again at its
     * own {@code data transfers complete} line; the column is the sum of the two differences over
     * {@code count}. Before the first post the receiver has been spinning on its CQ since its own 3 s
     * pause ended, for as long as the sender took to start, which says nothing about the transfer; that
     * stays outside, as for ours.
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
        long recvs0 = PortCounters.read(device, 1).get(PortCounters.DELIVERED);
        long[] atStart = {-1, -1}; // receiver, sender: CPU microseconds when the sender began
        long[] atEnd = {-1, -1}; // each when it said its transfer was complete
        Mckey result = mckeyRun(args, senderArgs, run, count, recvs0, atStart, atEnd);
        if (!result.ok()) {
            return result;
        }
        double cpu = atStart[0] < 0 || atStart[1] < 0 || atEnd[0] < 0 || atEnd[1] < 0 ? Double.NaN
                : (double) (atEnd[0] - atStart[0] + atEnd[1] - atStart[1]) / count;
        return new Mckey(result.datagramsPerSecond(), result.received(), null, cpu);
    }

    private Mckey mckeyRun(List<String> args, List<String> senderArgs, int run, int count, long recvs0,
                           long[] atStart, long[] atEnd) {
        long[] rp = {-1};
        long[] sp = {-1};
        try (WatchedProcess receiver = WatchedProcess.start(onCpu(1, lineBuffered(args)), work.resolve("mckey-"
                + run + "-receiver.txt"), l -> {
                    if (atEnd[0] < 0 && l.contains("data transfers complete")) {
                        atEnd[0] = CpuTime.snapshot(rp[0]);
                    }
                }, rp)) {
            // It posts its receives before it joins: once it says so, nothing sent can find it unready.
            if (receiver.await("mckey: joined", System.nanoTime() + Duration.ofSeconds(20).toNanos()) < 0) {
                return new Mckey(Double.NaN, 0, "mckey receiver did not join: " + tail(receiver.file));
            }
            try (WatchedProcess sender = WatchedProcess.start(onCpu(0, lineBuffered(senderArgs)),
                    work.resolve("mckey-" + run + "-sender.txt"), l -> {
                        if (atStart[0] < 0 && l.contains("initiating data transfers")) {
                            atStart[0] = CpuTime.snapshot(rp[0]);
                            atStart[1] = CpuTime.snapshot(sp[0]);
                        } else if (atEnd[1] < 0 && l.contains("data transfers complete")) {
                            atEnd[1] = CpuTime.snapshot(sp[0]);
                        }
                    }, sp)) {
                long deadline = System.nanoTime() + timeout.toNanos();
                long t0 = sender.await("initiating data transfers", deadline);
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
                    long got = recvs0 < 0 ? -1 : PortCounters.read(device, 1).get(PortCounters.DELIVERED) - recvs0;
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

    /**
     * Waits until an RDMA CM id listens on {@code port}, as iproute2's {@code rdma resource show cm_id} lists
     * it. perftest's servers print their banner before {@code rdma_listen} and cmtime's prints nothing, and
     * a client that comes before the listen is rejected; on an emulated CPU under load no fixed pause is
     * long enough. Without the {@code rdma} tool, or not as root (the kernel then may not list other
     * processes' ids), it pauses {@link #LISTEN_PAUSE} instead.
     *
     * @return whether {@code p} is alive and the port listens within {@code wait}
     */
    static boolean awaitListening(Process p, int port, Duration wait) throws IOException, InterruptedException {
        if (!installed("rdma") || !"root".equals(System.getProperty("user.name"))) {
            Thread.sleep(LISTEN_PAUSE.toMillis());
            return p.isAlive();
        }
        long deadline = System.nanoTime() + wait.toNanos();
        while (System.nanoTime() < deadline && p.isAlive()) {
            Process q = new ProcessBuilder("rdma", "resource", "show", "cm_id").redirectErrorStream(true).start();
            String out = new String(q.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            q.waitFor();
            if (ToolOutput.listensOn(out, port)) {
                return true;
            }
            Thread.sleep(50);
        }
        return false;
    }

    /** {@return what a failed tool's output in {@code file} says of the failure ({@link ToolOutput#failure})} */
    static String tail(Path file) {
        try {
            return ToolOutput.failure(Files.readString(file));
        } catch (IOException e) {
            return "(no output)";
        }
    }
}
