package rdmaflux.samples.bench;

import java.io.IOException;
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
 * client on the same address with {@code -R} (connection manager), and {@code cmtime}; then parses
 * their result tables. Flags are those of the perftest 4.5 / rdma-core 44 generation.
 */
final class CTools {
    /** What one run produced: a value, or why there is none. */
    record Outcome(double value, String error) {
        static Outcome failed(String why) {
            return new Outcome(Double.NaN, why);
        }

        boolean ok() {
            return error == null;
        }
    }

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

    /** @return whether {@code tool} is on the PATH */
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
        return perftest(tool, size, iters, 9, 4, 1.0, List.of());
    }

    /**
     * Runs a perftest bandwidth tool and returns its average bandwidth in bytes per second.
     * The default MiB/s report is parsed rather than {@code --report_gbits}: on a slow device the Gbit/s
     * column keeps only two significant digits, too coarse for a 5 % target. {@code -N} turns off the
     * per-message timestamps perftest takes for its peak column, so the C loop is as lean as ours.
     *
     * @param tool e.g. {@code ib_write_bw}
     * @param size message size ({@code -s})
     * @param iters messages ({@code -n})
     * @return bytes per second
     */
    Outcome bandwidth(String tool, int size, int iters) {
        // #bytes #iterations BW_peak[MB/sec] BW_average[MB/sec] MsgRate[Mpps]
        return perftest(tool, size, iters, 5, 3, 1024.0 * 1024.0, List.of("-N"));
    }

    private Outcome perftest(String tool, int size, int iters, int columns, int column, double scale,
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
                server = start(onCpu(1, lineBuffered(args)), serverOut);
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
                Process client = start(onCpu(0, clientArgs), clientOut);
                if (!client.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    client.destroyForcibly();
                    last = tool + " client did not finish within " + timeout;
                    continue;
                }
                String text = Files.readString(clientOut);
                if (verbose) {
                    System.out.print(text);
                }
                double v = parseRow(text, size, columns, column);
                // perftest prints 0.00 when a run went wrong without failing; that is no measurement.
                if (client.exitValue() != 0 || Double.isNaN(v) || v <= 0) {
                    last = tool + " client exited with " + client.exitValue() + ": " + tail(clientOut);
                    continue;
                }
                server.waitFor(10, TimeUnit.SECONDS);
                return new Outcome(v * scale, null);
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

    private static Process start(List<String> command, Path output) throws IOException {
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

    private static List<String> lineBuffered(List<String> command) {
        if (!installed("stdbuf")) {
            return command;
        }
        List<String> c = new ArrayList<>(List.of("stdbuf", "-oL"));
        c.addAll(command);
        return c;
    }

    private static boolean awaitOutput(Process p, Path file, String marker, Duration wait)
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

    private static String tail(Path file) {
        try {
            String t = Files.readString(file).strip();
            String[] lines = t.split("\n");
            return String.join(" | ", List.of(lines).subList(Math.max(0, lines.length - 3), lines.length));
        } catch (IOException e) {
            return "(no output)";
        }
    }
}
