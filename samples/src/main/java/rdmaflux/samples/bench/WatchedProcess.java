package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * A child process whose output lines are timestamped ({@link System#nanoTime()}) as they arrive, by a
 * thread blocked on the pipe, and copied to a file.
 *
 * <p>Threads: the reader thread appends the lines and calls {@link #onLine}; any thread waits for a line
 * (under this object's monitor, which guards the lines).
 */
final class WatchedProcess implements AutoCloseable {
    final Process process;
    final Path file;
    private final List<String> lines = new ArrayList<>();
    private final List<Long> stamps = new ArrayList<>();
    private boolean ended;
    private Thread reader;
    /** Called by the reader thread with each line as soon as it is read, before anyone is told of it. */
    volatile Consumer<String> onLine;

    private WatchedProcess(Process process, Path file) {
        this.process = process;
        this.file = file;
    }

    static WatchedProcess start(List<String> command, Path file) throws IOException {
        return start(command, file, null, new long[1]);
    }

    /**
     * As {@link #start(List, Path)}, with {@link #onLine} set before the first line can arrive.
     *
     * @param pid set to the process's id before its first line can reach {@code onLine}
     */
    static WatchedProcess start(List<String> command, Path file, Consumer<String> onLine,
                         long[] pid) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        pid[0] = p.pid();
        WatchedProcess w = new WatchedProcess(p, file);
        w.onLine = onLine;
        w.reader = Thread.ofPlatform().daemon().name("bench-watch-" + file.getFileName()).start(w::read);
        return w;
    }

    private void read() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8)); Writer out = Files.newBufferedWriter(file)) {
            String line;
            while ((line = in.readLine()) != null) {
                long now = System.nanoTime();
                Consumer<String> hook = onLine;
                if (hook != null) {
                    hook.accept(line);
                }
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
        return awaitLine(l -> l.contains(marker), deadline);
    }

    /**
     * @param match what the line must satisfy
     * @param deadline {@link System#nanoTime()} to give up at
     * @return when the first such line arrived, or -1 if none did before the deadline or the output ended
     */
    synchronized long awaitLine(Predicate<String> match, long deadline)
            throws InterruptedException {
        for (int seen = 0;;) {
            for (; seen < lines.size(); seen++) {
                if (match.test(lines.get(seen))) {
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

    /** {@return whether the process exited before {@code deadline} ({@link System#nanoTime()})} */
    boolean waitFor(long deadline) throws InterruptedException {
        return process.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
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
