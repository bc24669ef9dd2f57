package rdmaflux.samples.asyncwatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rdmaflux.samples.SampleRun;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.PortState;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;

/**
 * asyncwatch prints the port events Soft-RoCE raises when its network device goes down and up again:
 * IBV_EVENT_PORT_ERR, then IBV_EVENT_PORT_ACTIVE. The test waits for the port to be ACTIVE again with
 * its GIDs back, so the tests after it find the device as it was.
 */
class AsyncWatchIT {
    private static final Duration T = Duration.ofSeconds(90);

    @TempDir
    Path tmp;

    @Test
    void printsPortDownAndUp() throws Exception {
        assertTrue(RdmaTestEnv.inSandbox(), "takes the RDMA network device down: only in the sandbox VM");
        String device = RdmaTestEnv.device();
        String netdev = Files.readString(Path.of("/sys/class/infiniband", device, "ports/1/gid_attrs/ndevs/0")).trim();
        try (SampleRun watch = SampleRun.start(new AsyncWatch(), "-d", device, "-n", "2", "--timeout", "80")) {
            long deadline = System.nanoTime() + T.toNanos();
            while (!watch.stdout().startsWith(device + ": async event FD ")) {
                assertTrue(System.nanoTime() - deadline < 0, watch::describe);
                Thread.sleep(50);
            }
            try {
                ip(netdev, "down");
                awaitPort(device, PortState.DOWN);
            } finally {
                ip(netdev, "up");
            }
            awaitPort(device, PortState.ACTIVE);
            assertEquals(0, watch.awaitExit(T), watch::describe);
            assertEquals(device + ": async event FD " + watch.stdout().lines().findFirst().orElseThrow()
                            .substring((device + ": async event FD ").length()) + "\n"
                            + "  event_type IBV_EVENT_PORT_ERR (10), port 1\n"
                            + "  event_type IBV_EVENT_PORT_ACTIVE (9), port 1\n",
                    watch.stdout(), watch::describe);
        } finally {
            awaitGidBack(device);
        }
    }

    private void ip(String netdev, String state) throws Exception {
        try (ChildProcess ip = ChildProcess.start(tmp, "ip", "link", "set", netdev, state)) {
            assertEquals(0, ip.awaitExit(T), ip::describe);
        }
    }

    private static void awaitPort(String device, PortState state) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        try (RdmaContext ctx = Rdma.open(device)) {
            while (ctx.queryPort(1).state() != state) {
                assertTrue(System.nanoTime() - deadline < 0, "port 1 of " + device + " not " + state + " within " + T);
                Thread.sleep(50);
            }
        }
    }

    /** The IPv4-mapped GID (index 1) comes back with the address once the device is up. */
    private static void awaitGidBack(String device) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        try (RdmaContext ctx = Rdma.open(device)) {
            while (ctx.queryGid(1, 1).isZero()) {
                assertTrue(System.nanoTime() - deadline < 0, "GID 1 of " + device + " not back within " + T);
                Thread.sleep(50);
            }
        }
    }
}
