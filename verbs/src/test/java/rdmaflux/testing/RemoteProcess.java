package rdmaflux.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.function.Predicate;

/**
 * A process that a host's agent runs for a test ({@link SandboxHosts#start}). Its stdout is read from the
 * shared directory by polling, and its stderr also appears in the run's output, prefixed with the host.
 * Not thread-safe: one test thread uses it.
 */
public final class RemoteProcess implements AutoCloseable {
    private final int host;
    private final Path job;

    RemoteProcess(int host, Path job) {
        this.host = host;
        this.job = job;
    }

    /** @return the host it runs on */
    public int host() {
        return host;
    }

    /**
     * Waits until the process prints a line that matches.
     *
     * @param match what to wait for
     * @param timeout how long at most
     * @return the first matching line
     */
    public String awaitLine(Predicate<String> match, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (String line : stdoutLines()) {
                if (match.test(line)) {
                    return line;
                }
            }
            if (exitCode().isPresent()) {
                throw new AssertionError("process on host " + host + " exited (" + exitCode().getAsInt()
                        + ") without the expected line; stdout: " + stdoutLines() + "; stderr: " + stderr());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("process on host " + host + " printed no expected line within " + timeout
                        + "; stdout: " + stdoutLines());
            }
            sleep();
        }
    }

    /** @return the lines it printed on stdout so far */
    public List<String> stdoutLines() {
        return read("stdout").lines().toList();
    }

    /** @return what it printed on stderr so far */
    public String stderr() {
        return read("stderr");
    }

    /** @return its exit status, once it has exited */
    public OptionalInt exitCode() {
        String s = read("exit").trim();
        return s.isEmpty() ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(s));
    }

    /**
     * Waits for the process to exit.
     *
     * @param timeout how long at most
     * @return its exit status
     */
    public int waitFor(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (exitCode().isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("process on host " + host + " did not exit within " + timeout
                        + "; stdout: " + stdoutLines() + "; stderr: " + stderr());
            }
            sleep();
        }
        return exitCode().getAsInt();
    }

    /** Kills it (SIGKILL) and waits until it is gone; nothing to do when its host crashed. */
    public void kill() {
        if (SandboxHosts.crashed(host) || exitCode().isPresent()) {
            return;
        }
        try {
            Files.writeString(job.resolve("kill"), "\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        waitFor(Duration.ofSeconds(60));
    }

    /** Kills it if it still runs. */
    @Override
    public void close() {
        kill();
    }

    private String read(String name) {
        // java.io, not a channel: NIO would cache a direct buffer as large as the file on this thread.
        try (java.io.InputStream in = new java.io.FileInputStream(job.resolve(name).toFile())) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.FileNotFoundException e) {
            return "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void sleep() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
