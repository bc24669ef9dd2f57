package rdmaflux.samples.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Process CPU time (user + system) for the CPU-per-message column, from the kernel's own accounting on
 * both sides, so the two are read the same way:
 *
 * <ul>
 *   <li>Ours: {@code getrusage(RUSAGE_SELF)} of the benchmark JVM (every thread: the loops, the JIT, the GC,
 *       the library's loops), read through the FFM API at the start and the end of a loop's timed part
 *       ({@link #start()}, {@link #stop()}). Microsecond resolution; the kernel charges a thread's run time
 *       from the scheduler clock, not in ticks, so the emulator's 4 ms tick does not quantize it.</li>
 *   <li>A C tool: {@link #snapshot} reads its process's CPU time so far from the run time the scheduler
 *       charged to each of its threads ({@code /proc/PID/task/TID/schedstat}, nanoseconds; the same clock
 *       {@code getrusage} sums), at the two lines of its output that bracket its timed part
 *       ({@link CTools}).</li>
 * </ul>
 * {@link #start()} and {@link #stop()} allocate nothing, so they may sit next to the allocation counters.
 */
final class CpuTime {
    private static final int RUSAGE_SELF = 0;
    private static final MethodHandle GETRUSAGE = Linker.nativeLinker().defaultLookup().find("getrusage")
            .map(f -> Linker.nativeLinker().downcallHandle(f, FunctionDescriptor.of(ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS)))
            .orElse(null);
    /** struct rusage (144 bytes on x86-64 and aarch64 Linux); ru_utime at 0, ru_stime at 16 (timevals). */
    private static final MemorySegment USAGE = Arena.global().allocate(144, 8);
    /** USER_HZ: the unit of utime and stime in /proc/PID/stat. */
    private static final int CLOCK_TICKS_PER_SECOND = 100;

    private static long started = -1;
    private static long last = -1;

    private CpuTime() {
    }

    /** {@return whether this process's CPU time can be read} */
    static boolean available() {
        return GETRUSAGE != null;
    }

    /** {@return this process's CPU time (user + system, all threads) in microseconds, -1 if unavailable} */
    static synchronized long processMicros() {
        if (GETRUSAGE == null) {
            return -1;
        }
        try {
            if ((int) GETRUSAGE.invokeExact(RUSAGE_SELF, USAGE) != 0) {
                return -1;
            }
        } catch (Throwable e) {
            return -1;
        }
        return USAGE.get(ValueLayout.JAVA_LONG, 0) * 1_000_000 + USAGE.get(ValueLayout.JAVA_LONG, 8)
                + USAGE.get(ValueLayout.JAVA_LONG, 16) * 1_000_000 + USAGE.get(ValueLayout.JAVA_LONG, 24);
    }

    /** Marks the start of a timed part (any thread). */
    static synchronized void start() {
        started = processMicros();
        last = -1;
    }

    /** Marks its end (any thread, after {@link #start()}): the interval is kept for {@link #take}. */
    static synchronized void stop() {
        long now = processMicros();
        last = started < 0 || now < 0 ? -1 : now - started;
    }

    /**
     * Takes the last interval, so one run's value can never be read for another.
     *
     * @param messages what to divide by
     * @return process CPU microseconds per message of the last timed part, NaN if none was recorded
     */
    static synchronized double take(long messages) {
        long v = last;
        last = -1;
        started = -1;
        return v < 0 || messages <= 0 ? Double.NaN : (double) v / messages;
    }

    /**
     * A running process's CPU time so far: the run time the scheduler charged to each of its threads
     * ({@code /proc/PID/task/TID/schedstat}, nanoseconds), summed; from {@link #stat} (10 ms ticks) where
     * the kernel has no schedstat.
     *
     * @return microseconds, -1 if the process is gone
     */
    static long snapshot(long pid) {
        if (pid <= 0) {
            return -1;
        }
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        long ns = 0;
        try (java.util.stream.Stream<Path> all = Files.list(tasks)) {
            for (Path t : (Iterable<Path>) all::iterator) {
                try {
                    ns += Long.parseLong(Files.readString(t.resolve("schedstat")).strip().split(" ")[0]);
                } catch (java.nio.file.NoSuchFileException e) {
                    // a thread that ended meanwhile; its time is in the process's total only
                }
            }
        } catch (java.nio.file.NoSuchFileException e) {
            return -1;
        } catch (IOException | RuntimeException e) {
            return stat(pid);
        }
        return ns / 1000;
    }

    /**
     * A running process's CPU time so far, all its threads, from {@code /proc/PID/stat} (utime + stime,
     * clock ticks).
     *
     * @return microseconds, -1 if the process is gone
     */
    static long stat(long pid) {
        try {
            String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            // The command name may hold spaces; the fields after it are fixed: state is the third.
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15: utime, stime
            return ticks * (1_000_000L / CLOCK_TICKS_PER_SECOND);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
