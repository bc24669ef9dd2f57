package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Map;

import rdmaflux.testing.RdmaResources;

/** Test fixture: waits for the kernel's RDMA object counts to come back to a baseline. */
final class Resources {
    private Resources() {
    }

    /**
     * Teardown is asynchronous (CM thread, completion thread, the peer's side): polls
     * {@link RdmaResources#snapshot()} until it equals {@code baseline}, then asserts it does.
     *
     * @param baseline counts taken before the test's connections
     * @param within the longest wait
     * @param what what is checked, for the failure message
     */
    static void awaitBaseline(Map<String, Integer> baseline, Duration within, String what) {
        long deadline = System.nanoTime() + within.toNanos();
        Map<String, Integer> now = RdmaResources.snapshot();
        while (!now.equals(baseline) && System.nanoTime() < deadline) {
            sleep(200);
            now = RdmaResources.snapshot();
        }
        assertEquals(baseline, now, what + ": kernel RDMA objects (rdma resource show) not back to the baseline");
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
