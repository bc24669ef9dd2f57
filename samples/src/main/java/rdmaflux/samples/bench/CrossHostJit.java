package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.time.Duration;

/** The JIT's state, shared by the cross-host benchmark's client and server parts ({@link CrossHostBench}). */
final class CrossHostJit {
    private CrossHostJit() {
    }

    /** {@return the JIT compilers' total time so far in milliseconds, 0 where it is not monitored} */
    static long millis() {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
    }

    /**
     * Waits until the JIT compilers have been idle for a second (at most 30 s, quick 5 s), as
     * {@link Bench} does before its latency rows: a compilation competes with the loop for the VM's CPU.
     */
    static void awaitQuiet(boolean quick, java.util.function.BiConsumer<String, Object[]> say) {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long start = System.nanoTime();
        long deadline = start + Duration.ofSeconds(quick ? 5 : 30).toNanos();
        long last = jit.getTotalCompilationTime();
        try {
            while (System.nanoTime() < deadline) {
                Thread.sleep(1000);
                long now = jit.getTotalCompilationTime();
                if (now == last) {
                    return;
                }
                last = now;
            }
            say.accept("bench: the JIT was still compiling after %.0f s; measuring anyway",
                    new Object[] {(System.nanoTime() - start) / 1e9});
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
