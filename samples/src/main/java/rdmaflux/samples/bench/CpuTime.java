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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Process CPU time (user + system) for the CPU-per-message column, from the kernel's own accounting on
 * both sides, so the two are read the same way:
 *
 * <ul>
 *   <li>Ours: {@code getrusage(RUSAGE_SELF)} of the benchmark JVM (every thread: the loops, the JIT, the GC,
 *       the library's loops), read through the FFM API at the start and the end of a loop's timed part
 *       ({@link #start()}, {@link #stop()}). Microsecond resolution; the kernel charges a thread's run time
 *       from the scheduler clock, not in ticks, so the emulator's 4 ms tick does not quantize it.</li>
 *   <li>A C tool: {@link #wrap} runs it under {@code bash}, which waits for it and then prints
 *       {@code times}: the second line is {@code getrusage(RUSAGE_CHILDREN)}, i.e. what {@code wait4}
 *       reported for the tool's process, all its threads, over its whole life (millisecond resolution as
 *       bash prints it). {@link #stat} reads a running process's total from {@code /proc/PID/stat}
 *       (clock ticks, 10 ms), for a snapshot at a point of its output.</li>
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
    private static final Pattern TIME = Pattern.compile("(\\d+)m(\\d+(?:\\.\\d+)?)s");

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
     * The command that runs {@code command} under bash and writes bash's {@code times} to {@code file} once
     * the tool has exited, and the tool's process id to {@code file.pid} when it starts. A SIGTERM to bash
     * (Process.destroy) is passed on to the tool, so stopping the wrapper stops the tool too.
     */
    static java.util.List<String> wrap(java.util.List<String> command, Path file) {
        String script = "f=$1; shift; \"$@\" & p=$!; echo $p > \"$f.pid\"; "
                + "trap 'kill -TERM $p 2>/dev/null' TERM INT; wait $p; rc=$?; "
                + "while [ $rc -gt 128 ] && kill -0 $p 2>/dev/null; do wait $p; rc=$?; done; "
                + "times > \"$f\"; exit $rc";
        java.util.List<String> c = new java.util.ArrayList<>(java.util.List.of("bash", "-c", script, "cpu-time",
                file.toString()));
        c.addAll(command);
        return c;
    }

    /** {@return whether {@link #wrap} can be used (bash is on the PATH)} */
    static boolean canWrap() {
        return CTools.installed("bash");
    }

    /**
     * Reads what {@link #wrap} wrote: the children's user + system time.
     *
     * @return microseconds, -1 when the file is missing or unreadable (the wrapper was killed)
     */
    static long childMicros(Path file) {
        try {
            if (!Files.exists(file)) {
                return -1;
            }
            String[] lines = Files.readString(file).strip().split("\n");
            if (lines.length < 2) {
                return -1;
            }
            Matcher m = TIME.matcher(lines[1]);
            long total = 0;
            int found = 0;
            while (m.find()) {
                total += Long.parseLong(m.group(1)) * 60_000_000L + Math.round(Double.parseDouble(m.group(2)) * 1e6);
                found++;
            }
            return found == 2 ? total : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** {@return the process id {@link #wrap} wrote next to {@code file}, -1 if not (yet) there} */
    static long pid(Path file) {
        try {
            Path p = Path.of(file + ".pid");
            return Files.exists(p) ? Long.parseLong(Files.readString(p).strip()) : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
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
