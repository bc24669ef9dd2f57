package rdmaflux.samples.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Warming a measured path up until the JIT is done with it, shared by the rows that measure the reactive
 * API (whose Reactor path takes C2 thousands of messages to compile, under emulation seconds of CPU beside
 * the spinning threads).
 *
 * <p>Threads: the benchmark's thread only.
 */
final class Warmup {
    /**
     * The fewest rounds. A path that changed (a new message size takes the other side of a branch, and
     * HotSpot deoptimizes the methods that never saw it) runs in C1's profiling code until it has been
     * called some 15,000 times more, and C2 compiles it only then. Three rounds of 4,000 messages can be
     * quiet and leave that compilation to the first timed run (a JFR recording: {@code SendQueue.tryPost},
     * 0.45 s of C2 in a run of 0.6 s at 512 B); six pass that point.
     */
    static final int MIN_ROUNDS = 6;

    /**
     * The rounds in a row, after {@link #MIN_ROUNDS}, through which the JIT must stay quiet before a joint
     * warm-up ({@link #settleTogether}) ends: one quiet round can fall between two C2 compilations of a path
     * whose rarer branches are still being profiled (the reactive SEND stream at 2 B warming up beside the verbs
     * stream: its 80th round quiet, its 90th with 56 ms of C2).
     */
    static final int QUIET_ROUNDS = 3;

    /**
     * One side of a joint warm-up: its untimed round.
     *
     * @param what the side, for the line printed
     * @param round runs one untimed round and returns its rate (any unit where more is faster)
     */
    record Side(String what, Supplier<Double> round) {
    }

    /** Watches the JIT through a stretch of work; the real one is {@link #HOTSPOT}, tests give their own. */
    interface JitWatch {
        /** {@return a watch started now: its {@code getAsBoolean()}, at the stretch's end, says whether the JIT was quiet} */
        BooleanSupplier start();
    }

    /**
     * The JVM's JIT, quiet through a stretch when it compiled for less than 5 % of its wall time and its compiler
     * threads used less than 5 % of it ({@link ThreadCpu#jitSince}): its compilation time counts a compilation
     * only when it ends, and one C2 compilation lasts seconds under emulation.
     */
    static final JitWatch HOTSPOT = () -> {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return () -> true;
        }
        long c0 = jit.getTotalCompilationTime();
        ThreadCpu cpu = ThreadCpu.snapshot();
        long t0 = System.nanoTime();
        return () -> {
            double wallMs = (System.nanoTime() - t0) / 1e6;
            return jit.getTotalCompilationTime() - c0 < 0.05 * wallMs
                    && ThreadCpu.snapshot().jitSince(cpu) * 1000 < 0.05 * wallMs;
        };
    };

    private Warmup() {
    }

    /**
     * Untimed rounds of every side in turn, the same number for each, until the JIT was quiet through
     * {@link #QUIET_ROUNDS} whole rounds of all sides in a row (at least {@link #MIN_ROUNDS} rounds, at most
     * {@code max}). The sides of one comparison warm up together, so none gets more untimed work than another,
     * and none is measured while the JIT still compiles another's path (the compiler shares the emulated
     * CPUs with whichever side runs). The JIT decides, not the rates: under emulation a side's rate moves by
     * up to 2× from round to round with the JIT done, and would keep a rule that waits for steady rates going
     * to its end.
     *
     * @param max the most rounds
     * @param sides the sides, run in this order in every round
     * @param jit watches the JIT through each round
     * @param say prints a line
     * @return the rounds each side ran
     */
    static int settleTogether(int max, List<Side> sides, JitWatch jit, Consumer<String> say) {
        int quiet = 0;
        double[] rates = new double[sides.size()];
        for (int round = 1; ; round++) {
            BooleanSupplier watch = jit.start();
            for (int i = 0; i < rates.length; i++) {
                rates[i] = sides.get(i).round().get();
            }
            quiet = watch.getAsBoolean() ? quiet + 1 : 0;
            if (round >= MIN_ROUNDS && quiet >= QUIET_ROUNDS || round >= max) {
                StringBuilder line = new StringBuilder("bench: warm after " + round + " rounds of each");
                for (int i = 0; i < rates.length; i++) {
                    line.append(i == 0 ? ": " : ", ").append(sides.get(i).what()).append(' ')
                            .append(String.format(java.util.Locale.ROOT, "%.0f", rates[i]));
                }
                say.accept(line.append(quiet >= QUIET_ROUNDS ? "" : "; the JIT still compiling").toString());
                return round;
            }
        }
    }

    /**
     * Whether the JIT's compiler threads used 10 % or more of a run's wall time: the run measured the compiler
     * as well as the path. Only reported in the progress lines: {@link Comparison} keeps every run whatever the JIT did, on both sides.
     *
     * @param jitSeconds the compiler threads' CPU time during the run ({@link ThreadCpu#jitSince})
     * @param wallSeconds the run's wall time
     * @return whether it was
     */
    static boolean jitBusy(double jitSeconds, double wallSeconds) {
        return jitSeconds >= 0.10 * wallSeconds;
    }

    /**
     * Untimed rounds until the JIT compiled less than 5 % of a round's time and two rounds in a row agree
     * within 5 % (at least {@link #MIN_ROUNDS} rounds, at most {@code max}). The rate alone is not enough:
     * two rounds can agree while C2 is still compiling the Reactor path, and the first timed row would then
     * measure the compiler.
     * The JIT's own count is not enough either: it counts a compilation when it ends, and one C2 compilation
     * lasts seconds under emulation, so a round is quiet only if the compiler threads also used under 5 % of
     * its time ({@link #HOTSPOT}).
     *
     * @param what the path, for the line printed
     * @param max the most rounds
     * @param rate runs one round and returns its rate (any unit where more is faster)
     * @param unit the rate's unit, for the line printed
     * @param say prints a line
     */
    static void settle(String what, int max, Supplier<Double> rate, String unit, Consumer<String> say) {
        double previous = 0;
        for (int round = 1; round <= max; round++) {
            BooleanSupplier watch = HOTSPOT.start();
            double r = rate.get();
            boolean quiet = watch.getAsBoolean();
            boolean steady = Math.abs(r - previous) < 0.05 * previous;
            if (round >= MIN_ROUNDS && quiet && steady || round == max) {
                say.accept(String.format("bench: %s warm after %d rounds (%.0f %s)%s", what, round, r, unit,
                        quiet && steady ? "" : quiet ? ", rate still changing" : ", the JIT still compiling"));
                return;
            }
            previous = r;
        }
    }

    /**
     * Waits until the JIT compilers have been idle for a second, at most {@code max}: under emulation a C2
     * compilation takes long enough to compete with the measured threads for the CPUs.
     *
     * @param max the longest wait; after it, a line says that the measurement goes on anyway
     * @param say prints a line
     */
    static void awaitJitQuiet(java.time.Duration max, Consumer<String> say) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long start = System.nanoTime();
        long deadline = start + max.toNanos();
        long last = jit.getTotalCompilationTime();
        ThreadCpu cpu = ThreadCpu.snapshot();
        try {
            while (System.nanoTime() < deadline) {
                Thread.sleep(1000);
                long now = jit.getTotalCompilationTime();
                ThreadCpu next = ThreadCpu.snapshot();
                // The compilation time counts a compilation when it ends, and one C2 compilation can take
                // seconds under emulation: quiet is also a second in which the compiler threads took under 5%
                // of a CPU.
                if (now == last && next.jitSince(cpu) < 0.05) {
                    return;
                }
                last = now;
                cpu = next;
            }
            say.accept(String.format(java.util.Locale.ROOT, "bench: the JIT was still compiling after %.0f s; "
                    + "measuring anyway", (System.nanoTime() - start) / 1e9));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
