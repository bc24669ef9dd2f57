package rdmaflux.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Samples this JVM ({@link ProcessSample}) at a fixed period into a TSV file that {@link SamplePlot} draws,
 * for the chaos run and the soak; and judges whether a series stayed flat.
 */
public final class ProcessSampler implements AutoCloseable {
    private final Path file;
    private final Thread thread;
    private volatile boolean stopped;

    private ProcessSampler(Path file, Duration period) {
        this.file = file;
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.writeString(file, ProcessSample.HEADER + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        thread = Thread.ofPlatform().daemon().name("process-sampler").start(() -> {
            while (!stopped) {
                append(ProcessSample.now());
                try {
                    Thread.sleep(period.toMillis());
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /**
     * Starts sampling.
     *
     * @param file the TSV file (replaced)
     * @param period time between samples
     * @return the running sampler
     */
    public static ProcessSampler start(Path file, Duration period) {
        return new ProcessSampler(file, period);
    }

    /**
     * Adds a sample taken elsewhere (the baseline, the end) to the file.
     *
     * @param s the sample
     */
    public synchronized void append(ProcessSample s) {
        try {
            Files.writeString(file, s.tsv() + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to " + file, e);
        }
    }

    /** {@return every sample written so far} */
    public List<ProcessSample> samples() {
        return read(file);
    }

    /**
     * @param file a file a sampler wrote
     * @return its samples
     */
    public static List<ProcessSample> read(Path file) {
        try {
            List<ProcessSample> all = new ArrayList<>();
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                if (!line.isBlank() && !line.startsWith("millis")) {
                    all.add(ProcessSample.parse(line));
                }
            }
            return all;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * Whether a long run stayed flat: its last quarter must not hold more than its second quarter (once the
     * JIT, the heap and the pools warmed up) beyond a margin: 10 % plus 16 MiB of resident memory, 2 threads
     * and 4 descriptors (what the JDK's and Reactor's timed pools hold at one moment). A leak of one
     * connection's worth per churn grows without bound and fails it on a run long enough.
     *
     * @param samples the run's samples, in order
     * @return the quantities that grew, empty when flat
     */
    public static String growth(List<ProcessSample> samples) {
        if (samples.size() < 8) {
            return "too few samples (" + samples.size() + ") to judge";
        }
        int n = samples.size();
        List<ProcessSample> second = samples.subList(n / 4, n / 2);
        List<ProcessSample> last = samples.subList(n - n / 4, n);
        StringBuilder d = new StringBuilder();
        long rss2 = second.stream().mapToLong(ProcessSample::rssKib).max().orElseThrow();
        long rss4 = last.stream().mapToLong(ProcessSample::rssKib).max().orElseThrow();
        if (rss4 > rss2 * 11 / 10 + 16 * 1024) {
            d.append("resident memory ").append(rss2 / 1024).append(" -> ").append(rss4 / 1024).append(" MiB; ");
        }
        int t2 = second.stream().mapToInt(ProcessSample::threads).max().orElseThrow();
        int t4 = last.stream().mapToInt(ProcessSample::threads).max().orElseThrow();
        if (t4 > t2 + 2) {
            d.append("threads ").append(t2).append(" -> ").append(t4).append("; ");
        }
        int f2 = second.stream().mapToInt(ProcessSample::fds).max().orElseThrow();
        int f4 = last.stream().mapToInt(ProcessSample::fds).max().orElseThrow();
        if (f4 > f2 + 4) {
            d.append("file descriptors ").append(f2).append(" -> ").append(f4).append("; ");
        }
        return d.toString();
    }

    /** Stops sampling. */
    @Override
    public void close() {
        stopped = true;
        thread.interrupt();
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
