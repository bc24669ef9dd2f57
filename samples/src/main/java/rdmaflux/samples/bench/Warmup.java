package rdmaflux.samples.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
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
     * The most timed runs of a row measured again because the JIT compiled during them ({@link
     * #compiledDuring}).
     */
    static final int MAX_REDONE = 2;

    private Warmup() {
    }

    /**
     * Whether the JIT's compiler threads used 10 % or more of a timed run's wall time: the run measured the
     * compiler as well as the path. Twice the warm-up's bound ({@link #settle}), as the compiler threads'
     * time is read in 10 ms ticks and a timed run can be as short as 0.2 s. After every warm-up, C2
     * still reaches methods whose counters grow slowly (the re-arm before a loop sleeps, a branch taken
     * once per stream) during the timed runs, and under emulation one such compilation takes a quarter of
     * a run's CPU.
     *
     * @param before a snapshot taken when the run started
     * @param wallSeconds the run's wall time
     * @return whether the run should be measured again
     */
    static boolean compiledDuring(ThreadCpu before, double wallSeconds) {
        return ThreadCpu.snapshot().jitSince(before) >= 0.10 * wallSeconds;
    }

    /**
     * Untimed rounds until the JIT compiled less than 5 % of a round's time and two rounds in a row agree
     * within 5 % (at least {@link #MIN_ROUNDS} rounds, at most {@code max}). The rate alone is not enough:
     * two rounds can agree while C2 is still compiling the Reactor path, and the first timed row would then
     * measure the compiler.
     * The JIT's own count is not enough either: it counts a compilation when it ends, and one C2 compilation
     * lasts seconds under emulation, so a round is quiet only if the compiler threads also used under 5 % of
     * its time ({@link ThreadCpu#jitSince}).
     *
     * @param what the path, for the line printed
     * @param max the most rounds
     * @param rate runs one round and returns its rate (any unit where more is faster)
     * @param unit the rate's unit, for the line printed
     * @param say prints a line
     */
    static void settle(String what, int max, Supplier<Double> rate, String unit, Consumer<String> say) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean monitored = jit != null && jit.isCompilationTimeMonitoringSupported();
        double previous = 0;
        for (int round = 1; round <= max; round++) {
            long c0 = monitored ? jit.getTotalCompilationTime() : 0;
            ThreadCpu cpu = ThreadCpu.snapshot();
            long t0 = System.nanoTime();
            double r = rate.get();
            double wallMs = (System.nanoTime() - t0) / 1e6;
            boolean quiet = !monitored || jit.getTotalCompilationTime() - c0 < 0.05 * wallMs
                    && ThreadCpu.snapshot().jitSince(cpu) * 1000 < 0.05 * wallMs;
            boolean steady = Math.abs(r - previous) < 0.05 * previous;
            if (round >= MIN_ROUNDS && quiet && steady || round == max) {
                say.accept(String.format("bench: %s warm after %d rounds (%.0f %s)%s", what, round, r, unit,
                        quiet && steady ? "" : quiet ? ", rate still changing" : ", the JIT still compiling"));
                return;
            }
            previous = r;
        }
    }
}
