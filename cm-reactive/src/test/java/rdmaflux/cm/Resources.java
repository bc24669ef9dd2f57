package rdmaflux.cm;

import rdmaflux.cm.internal.cq.Devices;
import rdmaflux.cm.internal.loop.Loops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.PortSpace;

/** Test fixture: waits for the kernel's RDMA object counts to come back to a baseline. */
final class Resources {
    private static volatile boolean deviceOpened;

    private Resources() {
    }

    /**
     * The counts to come back to. librdmacm opens a device context on a process's first use of the
     * device and keeps it for the life of the process ({@code ctx} in {@code rdma resource show}): that
     * is done here first, so it is in every baseline. Then waits until the counts stop moving, because
     * the previous test's connections may still be closing on the CM thread. The shared loops' protection
     * domain is made first too ({@link #sharedDomain()}): it lives as long as those loops, not as long as
     * a test's connections.
     *
     * @return the settled counts
     */
    static Map<String, Integer> baseline() {
        sharedDomain();
        if (!deviceOpened) {
            RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0)).block(Duration.ofSeconds(60))
                    .disposeNow(Duration.ofSeconds(60));
            deviceOpened = true;
        }
        Map<String, Integer> prev = RdmaResources.snapshot();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            sleep(300);
            Map<String, Integer> now = RdmaResources.snapshot();
            if (now.equals(prev)) {
                return now;
            }
            prev = now;
        }
        return prev;
    }

    /**
     * Makes the protection domain {@link RdmaLoops#shared()} keeps for the test device, unless it exists:
     * the first connection on those loops would make it, and it stays until they are disposed, so a
     * baseline taken before must include it. Peer processes call this before they serve, for the same
     * reason. Cheap when it exists. Made on the loops' CM loop, which owns their per-device resources.
     */
    static void sharedDomain() {
        Loops loops = Loops.shared();
        if (Devices.of(loops).domainCount() > 0) {
            return;
        }
        try (EventChannel channel = EventChannel.create()) {
            CmId id = channel.createId(PortSpace.TCP);
            id.bind(new InetSocketAddress(RdmaTestEnv.address(), 0));
            CompletableFuture<Void> made = new CompletableFuture<>();
            loops.cm().execute(() -> {
                try {
                    Devices.of(loops).device(id).domain();
                    made.complete(null);
                } catch (RuntimeException | Error e) {
                    made.completeExceptionally(e);
                }
            });
            made.orTimeout(60, java.util.concurrent.TimeUnit.SECONDS).join();
        }
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
        if (!now.equals(baseline)) {
            // Which ids and queue pairs are left, and in which CM state, says which side kept what.
            assertEquals(baseline, now, what + ": kernel RDMA objects (rdma resource show) not back to the baseline;\n"
                    + rdmaShow("cm_id") + rdmaShow("qp"));
        }
    }

    private static String rdmaShow(String what) {
        try {
            Process p = new ProcessBuilder("rdma", "resource", "show", what).redirectErrorStream(true).start();
            return "rdma resource show " + what + ":\n" + new String(p.getInputStream().readAllBytes(),
                    java.nio.charset.StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            return "rdma resource show " + what + ": " + e + "\n";
        }
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
