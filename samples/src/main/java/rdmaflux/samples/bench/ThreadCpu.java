package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * CPU time per group of threads between two snapshots (a group: the threads whose names are equal but for
 * trailing digits), plus what the process used beyond them (the JIT's compiler threads and the GC, which
 * {@link ThreadMXBean} does not list). For the setup row's profile of each run, and for the stream runs,
 * whose CPU per message swings between runs: it says which threads the time went to.
 *
 * <p>Threads: any; each snapshot is the caller's.
 */
final class ThreadCpu {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final Map<String, Long> nanos;
    private final long processMicros;

    private ThreadCpu(Map<String, Long> nanos, long processMicros) {
        this.nanos = nanos;
        this.processMicros = processMicros;
    }

    /** {@return every live thread's CPU time so far, by group, and the process's} */
    static ThreadCpu snapshot() {
        Map<String, Long> m = new HashMap<>();
        for (long id : THREADS.getAllThreadIds()) {
            java.lang.management.ThreadInfo info = THREADS.getThreadInfo(id);
            long t = THREADS.getThreadCpuTime(id);
            if (info != null && t > 0) {
                m.merge(info.getThreadName().replaceAll("[-0-9]+$", ""), t, Long::sum);
            }
        }
        return new ThreadCpu(m, CpuTime.processMicros());
    }

    /** {@return the CPU seconds the process used since {@code before}} */
    double processSince(ThreadCpu before) {
        return (processMicros - before.processMicros) / 1e6;
    }

    /**
     * {@return the CPU seconds one group used since {@code before}}
     *
     * @param before the earlier snapshot
     * @param group the threads' name without trailing digits, e.g. {@code rdmaflux-completion}
     */
    double groupSince(ThreadCpu before, String group) {
        return (nanos.getOrDefault(group, 0L) - before.nanos.getOrDefault(group, 0L)) / 1e9;
    }

    /**
     * {@return the CPU seconds the process used since {@code before} beyond its listed threads: the JIT's
     * compiler threads and the GC}
     *
     * @param before the earlier snapshot
     */
    double unlistedSince(ThreadCpu before) {
        double listed = 0;
        for (String group : nanos.keySet()) {
            listed += groupSince(before, group);
        }
        return processSince(before) - listed;
    }

    /**
     * What each group used since {@code before}, largest first, groups under 5% of the process left out.
     *
     * @param before the earlier snapshot
     * @return e.g. {@code "process 1.20 s: bench-stream-srv-completion 0.50, ..., not listed (JIT, GC) 0.10"}
     */
    String since(ThreadCpu before) {
        double process = processSince(before);
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "process %.2f s", process));
        var used = new java.util.ArrayList<Map.Entry<String, Double>>();
        for (String group : nanos.keySet()) {
            used.add(Map.entry(group, groupSince(before, group)));
        }
        used.sort((x, y) -> Double.compare(y.getValue(), x.getValue()));
        String sep = ": ";
        for (Map.Entry<String, Double> e : used) {
            if (e.getValue() >= 0.05 * process) {
                b.append(sep).append(String.format(Locale.ROOT, "%s %.2f", e.getKey(), e.getValue()));
                sep = ", ";
            }
        }
        return b.append(String.format(Locale.ROOT, "%snot listed (JIT, GC) %.2f", sep, unlistedSince(before)))
                .toString();
    }
}
