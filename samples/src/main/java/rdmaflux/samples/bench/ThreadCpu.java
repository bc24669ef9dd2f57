package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * CPU time per group of threads between two snapshots (a group: the threads whose names are equal but for
 * trailing digits), plus what the process used beyond them (the JIT's compiler threads and the GC, which
 * {@link ThreadMXBean} does not list), and the compiler threads' own CPU where {@code /proc} tells it
 * ({@link #jitSince}). For the setup row's profile of each run, for the stream runs, whose CPU per message
 * swings between runs (it says which threads the time went to), and for telling when the JIT is done.
 *
 * <p>Threads: any; each snapshot is the caller's.
 */
final class ThreadCpu {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** Linux's {@code USER_HZ}: the unit of a task's {@code utime} and {@code stime} in {@code /proc}. */
    private static final int TICKS_PER_SECOND = 100;

    private final Map<String, Long> nanos;
    /** The part of {@link #nanos} spent in user mode: the rest went to the kernel (system calls, rxe). */
    private final Map<String, Long> userNanos;
    private final long processMicros;
    /** The compiler threads' CPU ticks so far, or -1 where {@code /proc/self/task} cannot tell. */
    private final long jitTicks;

    private ThreadCpu(Map<String, Long> nanos, Map<String, Long> userNanos, long processMicros, long jitTicks) {
        this.nanos = nanos;
        this.userNanos = userNanos;
        this.processMicros = processMicros;
        this.jitTicks = jitTicks;
    }

    /** {@return every live thread's CPU time so far, by group, and the process's} */
    static ThreadCpu snapshot() {
        Map<String, Long> m = new HashMap<>();
        Map<String, Long> user = new HashMap<>();
        for (long id : THREADS.getAllThreadIds()) {
            java.lang.management.ThreadInfo info = THREADS.getThreadInfo(id);
            long t = THREADS.getThreadCpuTime(id);
            if (info != null && t > 0) {
                m.merge(group(info.getThreadName()), t, Long::sum);
                user.merge(group(info.getThreadName()), Math.max(0, THREADS.getThreadUserTime(id)), Long::sum);
            }
        }
        return new ThreadCpu(m, user, CpuTime.processMicros(), jitTicks());
    }

    /**
     * The {@code stat} files of HotSpot's compiler threads, found once: reading every thread's on every
     * snapshot ran enough JDK code that C2 compiled it in the background during the timed run that followed
     * (0.7 s of compilation in a run of 0.6 s, in a JFR recording). With 2 CPUs, as in the sandbox, HotSpot
     * has one C1 and one C2 thread for the life of the process. With more, it may start compiler threads
     * later, which are not counted, and end them, which makes the next snapshot look again. Guarded by the
     * class.
     */
    private static java.nio.file.Path[] compilerStats;

    /**
     * The CPU ticks of HotSpot's compiler threads ({@code C1 CompilerThre}, {@code C2 CompilerThre}), which
     * {@link ThreadMXBean} does not list, from {@code /proc/self/task}; -1 where that cannot be read.
     */
    private static synchronized long jitTicks() {
        for (int attempt = 0; attempt < 2; attempt++) {
            if (compilerStats == null && (compilerStats = findCompilerStats()) == null) {
                return -1;
            }
            long ticks = 0;
            try {
                for (java.nio.file.Path stat : compilerStats) {
                    ticks += cpuTicks(java.nio.file.Files.readString(stat));
                }
                return ticks;
            } catch (java.io.IOException | RuntimeException gone) {
                compilerStats = null; // a compiler thread ended: look again
            }
        }
        return -1;
    }

    /** {@return the {@code stat} files of the compiler threads, or null where /proc cannot tell} */
    private static java.nio.file.Path[] findCompilerStats() {
        List<java.nio.file.Path> found = new ArrayList<>();
        try (var tasks = java.nio.file.Files.newDirectoryStream(java.nio.file.Path.of("/proc/self/task"))) {
            for (java.nio.file.Path task : tasks) {
                String name;
                try {
                    name = java.nio.file.Files.readString(task.resolve("comm"));
                } catch (java.io.IOException gone) {
                    continue; // the thread ended meanwhile
                }
                if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
                    found.add(task.resolve("stat"));
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
        return found.isEmpty() ? null : found.toArray(java.nio.file.Path[]::new);
    }

    /** {@return utime + stime of a task's {@code stat} line: proc(5) fields 14 and 15, after the name} */
    private static long cpuTicks(String stat) {
        int close = stat.lastIndexOf(')');
        String[] f = stat.substring(close + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** {@return a thread's name without its trailing digits and dashes: its group} */
    private static String group(String threadName) {
        int end = threadName.length();
        while (end > 0 && (Character.isDigit(threadName.charAt(end - 1)) || threadName.charAt(end - 1) == '-')) {
            end--;
        }
        return threadName.substring(0, end);
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
     * {@return the user-mode CPU seconds one group used since {@code before}: {@link #groupSince} less the
     * time in the kernel}
     *
     * @param before the earlier snapshot
     * @param group the threads' name without trailing digits
     */
    double groupUserSince(ThreadCpu before, String group) {
        return (userNanos.getOrDefault(group, 0L) - before.userNanos.getOrDefault(group, 0L)) / 1e9;
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
     * {@return the CPU seconds the JIT's compiler threads used since {@code before}, to 10 ms; or, where
     * {@code /proc} cannot tell, {@link #unlistedSince} (which also holds the GC and threads that ended)}
     *
     * @param before the earlier snapshot
     */
    double jitSince(ThreadCpu before) {
        if (jitTicks < 0 || before.jitTicks < 0) {
            return unlistedSince(before);
        }
        return (jitTicks - before.jitTicks) / (double) TICKS_PER_SECOND;
    }

    /**
     * What each group used since {@code before}, largest first, groups under 5% of the process left out.
     *
     * @param before the earlier snapshot
     * @return e.g. {@code "process 1.20 s: bench-stream-srv-completion 0.50, ..., not listed (JIT, GC) 0.10, JIT 0.08"}
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
        b.append(String.format(Locale.ROOT, "%snot listed (JIT, GC) %.2f", sep, unlistedSince(before)));
        if (jitTicks >= 0 && before.jitTicks >= 0) {
            b.append(String.format(Locale.ROOT, ", JIT %.2f", jitSince(before)));
        }
        return b.toString();
    }
}
