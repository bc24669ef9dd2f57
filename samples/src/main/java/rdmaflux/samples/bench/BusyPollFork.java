package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The busy-poll row's measurement ({@link ReactiveBusyPoll#measure}) in a JVM of its own, one fork of
 * several, as JMH forks. Why: the row's result is a property of the JVM it runs in, not only of the code.
 * In the sandbox, 13 JVMs that ran only this row (2026-11-28) each stayed in one mode for all their rounds:
 * most at 1.09-1.25 times the verbs ping-pong, one at 1.37-1.45, with the verbs side at 23-26 us in all.
 * Pinning the client and the completion loop to either CPU did not move a JVM out of its mode, so the mode
 * is not the threads' placement. One JVM measures one draw of that; several forks show the spread and their
 * pooled median does not rest on one draw. A fork also starts without the profiles of the rows before it.
 *
 * <p>The fork prints one line per timed run, starting with {@value #RESULT}; every other line it prints is
 * passed on.
 *
 * <p>Threads: {@link #run} on the benchmark's thread; {@link #main} in the fork.
 */
public final class BusyPollFork {
    /** What a result line starts with. */
    static final String RESULT = "busy-poll-run ";
    /** The longest a fork may take: its JVM start, warm-up, JIT wait and runs under emulation take 1-3 min. */
    private static final Duration FORK_LIMIT = Duration.ofMinutes(15);
    /**
     * The most warm-up rounds per side in a fork (a quick run's: a tenth). Its JVM compiles both paths from
     * nothing: 15 rounds left C2 compiling in every one of five forks (2026-11-28), and a round of 2,000
     * round trips takes well under a second.
     */
    static final int MAX_WARM_ROUNDS = 300;

    private BusyPollFork() {
    }

    /**
     * Runs one fork and waits for it.
     *
     * @param ip the RDMA interface's address
     * @param port the verbs link's port
     * @param iters timed round trips of each run
     * @param warm untimed round trips before each run
     * @param repeat timed runs of each side
     * @param quick the short run
     * @param pinThreads put the verbs ping-pong's threads on CPUs 0 and 1
     * @param timeout the longest wait for any step or echo
     * @param say prints a line (the fork's own lines too)
     * @return the fork's timed runs
     */
    static List<ReactiveBusyPoll.Run> run(InetAddress ip, int port, int iters, int warm, int repeat, boolean quick,
                                          boolean pinThreads, Duration timeout, Consumer<String> say) {
        List<String> command = ForkedJvm.command(-1, BusyPollFork.class, List.of(ip.getHostAddress(),
                Integer.toString(port), Integer.toString(iters), Integer.toString(warm), Integer.toString(repeat),
                Boolean.toString(quick), Boolean.toString(pinThreads), Long.toString(timeout.toSeconds())));
        Process process;
        try {
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the busy-poll fork", e);
        }
        // A fork that hangs is killed, which ends its output and the read below.
        Thread watchdog = Thread.ofPlatform().daemon().name("bench-busy-poll-fork-watchdog").start(() -> {
            try {
                if (!process.waitFor(FORK_LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
            }
        });
        List<ReactiveBusyPoll.Run> runs = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith(RESULT)) {
                    runs.add(parse(line.substring(RESULT.length())));
                } else {
                    say.accept("bench:   fork: " + line);
                }
            }
            process.waitFor();
            watchdog.join();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the busy-poll fork", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the busy-poll fork", e);
        } finally {
            process.destroyForcibly();
        }
        if (process.exitValue() != 0 || runs.size() != repeat) {
            throw new IllegalStateException("the busy-poll fork exited with " + process.exitValue() + " after "
                    + runs.size() + " of " + repeat + " runs (a fork still running after " + FORK_LIMIT
                    + " is killed)");
        }
        return runs;
    }

    static String format(ReactiveBusyPoll.Run r) {
        return String.format(Locale.ROOT, "%s %s %s %s %s", r.ours(), r.verbs(), r.oursCpu(), r.verbsCpu(),
                r.alloc());
    }

    static ReactiveBusyPoll.Run parse(String line) {
        String[] f = line.strip().split(" ");
        if (f.length != 5) {
            throw new IllegalArgumentException("not a busy-poll run: " + line);
        }
        return new ReactiveBusyPoll.Run(Double.parseDouble(f[0]), Double.parseDouble(f[1]),
                Double.parseDouble(f[2]), Double.parseDouble(f[3]), Double.parseDouble(f[4]));
    }

    /**
     * The fork: measures and prints its runs.
     *
     * @param args address, port, iterations, warm-up iterations, runs, quick, pin threads, timeout in seconds
     * @throws IOException when the address cannot be resolved
     */
    public static void main(String[] args) throws IOException {
        boolean quick = Boolean.parseBoolean(args[5]);
        List<ReactiveBusyPoll.Run> runs = ReactiveBusyPoll.measure(InetAddress.getByName(args[0]),
                Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                Integer.parseInt(args[4]), quick, quick ? MAX_WARM_ROUNDS / 10 : MAX_WARM_ROUNDS,
                Boolean.parseBoolean(args[6]), Duration.ofSeconds(Long.parseLong(args[7])), System.out::println);
        for (ReactiveBusyPoll.Run r : runs) {
            System.out.println(RESULT + format(r));
        }
        System.out.flush();
    }
}
