package rdmaflux.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A command-line tool (an rdma-core example such as {@code ibv_rc_pingpong}, or a JVM) run as a child process,
 * stdout and stderr each in a file (a pipe nobody drains could fill up and stall it) and
 * line-buffered through {@code stdbuf}, so a line is readable as soon as the tool prints it.
 * {@link #close()} kills it if it is still running and prints what it said, for the test log.
 */
public final class ChildProcess implements AutoCloseable {
    private final Process process;
    private final Path out;
    private final Path err;
    private final List<String> command;

    private ChildProcess(Process process, Path out, Path err, List<String> command) {
        this.process = process;
        this.out = out;
        this.err = err;
        this.command = command;
    }

    /**
     * Starts a tool.
     *
     * @param dir where the output files go (a test's temporary directory)
     * @param command the program and its arguments
     * @return the running process
     */
    public static ChildProcess start(Path dir, String... command) {
        List<String> full = new ArrayList<>(List.of("stdbuf", "-oL", "-eL"));
        full.addAll(List.of(command));
        try {
            // The program's file name: a path (such as a JDK's bin/java) is no valid temporary-file prefix.
            String name = Path.of(command[0]).getFileName().toString();
            Path out = Files.createTempFile(dir, name, ".out");
            Path err = Files.createTempFile(dir, name, ".err");
            Process p = new ProcessBuilder(full).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            return new ChildProcess(p, out, err, List.of(command));
        } catch (IOException e) {
            throw new AssertionError("cannot start " + String.join(" ", command) + ": " + e.getMessage(), e);
        }
    }

    /**
     * Waits for the exit.
     *
     * @param timeout the longest wait
     * @return the exit status
     * @throws AssertionError when it is still running after {@code timeout}
     */
    public int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("still running after " + timeout + ": " + describe());
        }
        return process.exitValue();
    }

    /** {@return whether the process is still running} */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** {@return what it printed on stdout so far} */
    public String stdout() {
        return read(out);
    }

    /** {@return what it printed on stderr so far} */
    public String stderr() {
        return read(err);
    }

    /** {@return the command, its exit status when it ended, and its output, for assertion messages} */
    public String describe() {
        return String.join(" ", command) + (process.isAlive() ? "" : " (exit " + process.exitValue() + ")")
                + "\n--- stdout\n" + stdout() + "--- stderr\n" + stderr();
    }

    private static String read(Path p) {
        try {
            return Files.readString(p, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        System.out.println(describe());
    }
}
