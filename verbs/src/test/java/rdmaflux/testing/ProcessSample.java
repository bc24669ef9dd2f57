package rdmaflux.testing;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * What this JVM holds at one moment, from the kernel's view of it ({@code /proc/self}) and the host's RDMA
 * objects ({@code rdma resource show}): the quantities a long run must give back.
 *
 * <p>{@code ownThreads} and {@code ownFds} leave out what the JDK and Reactor start on first use and keep,
 * or drop on a timer of their own, so that they can be compared exactly with a baseline: threads of pools
 * that end after 60 s idle ({@code process reaper} starts the {@code rdma} tool, {@code boundedElastic-*}),
 * Reactor's {@code parallel-*} workers (one per CPU, started as retries first wait), and the jar files the
 * class loader opens on first use and keeps.
 *
 * @param atMillis wall-clock time of the sample
 * @param rssKib resident set ({@code VmRSS})
 * @param threads every thread of the process
 * @param fds every open file descriptor
 * @param ownThreads threads less the timed pools above
 * @param ownFds descriptors less jar files
 * @param directBytes the JVM's direct and mapped buffers
 * @param rdma the host's kernel RDMA objects by kind (all processes)
 */
public record ProcessSample(long atMillis, long rssKib, int threads, int fds, int ownThreads, int ownFds,
                            long directBytes, Map<String, Integer> rdma) {
    private static final Pattern STATUS = Pattern.compile("(?m)^(VmRSS|Threads):\\s+(\\d+)");
    /** The TSV columns of {@link #tsv()}. */
    public static final String HEADER = "millis\trss_kib\tthreads\tfds\town_threads\town_fds\tdirect_bytes\trdma";

    /**
     * What direct memory may exceed the baseline by: NIO keeps a temporary direct buffer per thread, as
     * large as that thread's last file read or write through a channel (a peer was seen 4.7 KB above
     * its baseline after a chaos run, everything closed and collected). A connection's own buffers are
     * larger than this.
     */
    private static final long NIO_BUFFER_CACHE = 64 * 1024;

    /** Samples run one at a time: one's {@code rdma} child must not show in another's descriptors. */
    private static final Object ONE_AT_A_TIME = new Object();

    /** {@return a sample of this JVM now} */
    public static ProcessSample now() {
        synchronized (ONE_AT_A_TIME) {
            return take();
        }
    }

    private static ProcessSample take() {
        long rss = 0;
        int threads = 0;
        try {
            Matcher m = STATUS.matcher(Files.readString(Path.of("/proc/self/status")));
            while (m.find()) {
                if (m.group(1).equals("VmRSS")) {
                    rss = Long.parseLong(m.group(2));
                } else {
                    threads = Integer.parseInt(m.group(2));
                }
            }
        } catch (IOException e) {
            throw new AssertionError("cannot read /proc/self/status", e);
        }
        int own = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String n = t.getName();
            boolean timedPool = n.startsWith("process reaper") || n.startsWith("boundedElastic-")
                    || n.startsWith("parallel-");
            own += timedPool ? 0 : 1;
        }
        int fds = 0;
        int ownFds = 0;
        try (Stream<Path> all = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) all::iterator) {
                fds++;
                try {
                    ownFds += Files.readSymbolicLink(fd).toString().endsWith(".jar") ? 0 : 1;
                } catch (IOException gone) {
                    fds--; // the directory stream's own descriptor, or one closed meanwhile
                }
            }
        } catch (IOException e) {
            throw new AssertionError("cannot list /proc/self/fd", e);
        }
        long direct = 0;
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            direct += Math.max(0, pool.getMemoryUsed());
        }
        return new ProcessSample(System.currentTimeMillis(), rss, threads, fds, own, ownFds, direct,
                new TreeMap<>(RdmaResources.snapshot()));
    }

    /** {@return one line in the columns of {@link #HEADER}; the RDMA counts as kind=count,...} */
    public String tsv() {
        StringBuilder r = new StringBuilder();
        rdma.forEach((k, v) -> r.append(r.isEmpty() ? "" : ",").append(k).append('=').append(v));
        return atMillis + "\t" + rssKib + "\t" + threads + "\t" + fds + "\t" + ownThreads + "\t" + ownFds + "\t"
                + directBytes + "\t" + r;
    }

    /**
     * Parses a line of {@link #tsv()}.
     *
     * @param line the line
     * @return the sample
     */
    public static ProcessSample parse(String line) {
        String[] f = line.split("\t", -1);
        Map<String, Integer> rdma = new TreeMap<>();
        for (String kv : f[7].split(",")) {
            if (!kv.isEmpty()) {
                String[] p = kv.split("=");
                rdma.put(p[0], Integer.parseInt(p[1]));
            }
        }
        return new ProcessSample(Long.parseLong(f[0]), Long.parseLong(f[1]), Integer.parseInt(f[2]),
                Integer.parseInt(f[3]), Integer.parseInt(f[4]), Integer.parseInt(f[5]), Long.parseLong(f[6]), rdma);
    }

    /**
     * What differs from a baseline among the quantities that must come back exactly: the kernel's RDMA
     * objects, the threads and descriptors of {@code own*}, and the direct buffers.
     *
     * @param baseline the sample to come back to
     * @return a description of each difference, empty when back at the baseline
     */
    public String differenceFrom(ProcessSample baseline) {
        StringBuilder d = new StringBuilder();
        if (!rdma.equals(baseline.rdma)) {
            d.append("rdma ").append(baseline.rdma).append(" -> ").append(rdma).append("; ");
        }
        if (ownThreads != baseline.ownThreads) {
            d.append("threads ").append(baseline.ownThreads).append(" -> ").append(ownThreads).append("; ");
        }
        if (ownFds != baseline.ownFds) {
            d.append("fds ").append(baseline.ownFds).append(" -> ").append(ownFds).append("; ");
        }
        if (directBytes > baseline.directBytes + NIO_BUFFER_CACHE) {
            d.append("direct buffers ").append(baseline.directBytes).append(" -> ").append(directBytes).append(" B; ");
        }
        return d.toString();
    }

    /**
     * Waits until a sample is back at {@code baseline}, or, without one, until two samples half a second
     * apart agree (what a process holds once its teardown and warm-up settled). Each sample follows a
     * garbage collection: rdmaflux's buffer slabs and a connection's own buffers live in automatic arenas,
     * whose native memory (counted with the direct buffers) is freed once they are collected.
     *
     * @param baseline what to come back to, or {@code null}
     * @param within the longest wait
     * @return the last sample: compare it with the baseline to know whether it came back
     * @throws InterruptedException when interrupted
     */
    public static ProcessSample settled(ProcessSample baseline, java.time.Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        System.gc();
        ProcessSample prev = now();
        while (System.nanoTime() < deadline) {
            Thread.sleep(500);
            System.gc();
            ProcessSample now = now();
            if (now.differenceFrom(baseline == null ? prev : baseline).isEmpty()
                    && (baseline != null || prev.differenceFrom(now).isEmpty())) {
                return now;
            }
            prev = now;
        }
        return prev;
    }

    /** {@return the threads alive now, by name, for a failure message} */
    public static Map<String, Integer> threadNames() {
        Map<String, Integer> m = new TreeMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            m.merge(t.getName().replaceAll("\\d+$", "N"), 1, Integer::sum);
        }
        return m;
    }
}
