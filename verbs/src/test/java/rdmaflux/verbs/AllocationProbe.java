package rdmaflux.verbs;

import java.lang.management.ManagementFactory;
import java.util.Arrays;

/** Checks that a loop allocates nothing on the heap per iteration, with the JVM's per-thread counter. */
final class AllocationProbe {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int WINDOWS = 10;

    private AllocationProbe() {
    }

    /**
     * Runs {@code window} (a loop of many iterations) up to ten times on this thread and returns once one
     * run allocated no heap bytes. The JIT can allocate once while a loop runs (tier changes, linkage);
     * code that allocated per iteration would allocate in every run, so one clean run proves it does not.
     *
     * @param what the loop, for the failure message
     * @param window runs the loop once
     * @throws AssertionError with each run's byte count when every run allocated
     */
    static void assertNoSteadyAllocation(String what, Runnable window) {
        long[] bytes = new long[WINDOWS];
        for (int w = 0; w < WINDOWS; w++) {
            long before = THREADS.getCurrentThreadAllocatedBytes();
            window.run();
            bytes[w] = THREADS.getCurrentThreadAllocatedBytes() - before;
            if (bytes[w] == 0) {
                return;
            }
        }
        throw new AssertionError(what + " allocated in every run: " + Arrays.toString(bytes) + " bytes");
    }
}
