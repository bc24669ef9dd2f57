package rdmaflux.samples.pingpong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rdmaflux.samples.SampleRun;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Each pingpong sample against its libibverbs C counterpart from ibverbs-utils, both ways: our server
 * with the C client, the C server with our client. Both sides must count all iterations (their
 * "N iters in" line) and exit 0; -c has the server check the data the client's -c marked. GID index 1
 * is Soft-RoCE's IPv4-mapped RoCE v2 GID, without which RoCE cannot route.
 */
class PingPongInteropIT {
    private static final String N = "100";
    private static final Duration T = Duration.ofSeconds(120);

    @TempDir
    Path tmp;

    private final String device = RdmaTestEnv.device();
    private final String host = RdmaTestEnv.address().getHostAddress();

    @Test
    void rcOurServerCClient() throws Exception {
        ourServerCClient(RcPingPong::new, "ibv_rc_pingpong", "-c");
    }

    @Test
    void rcCServerOurClient() throws Exception {
        cServerOurClient(RcPingPong::new, "ibv_rc_pingpong", "-c");
    }

    @Test
    void ucOurServerCClient() throws Exception {
        ourServerCClient(UcPingPong::new, "ibv_uc_pingpong", "-c");
    }

    @Test
    void ucCServerOurClient() throws Exception {
        cServerOurClient(UcPingPong::new, "ibv_uc_pingpong", "-c");
    }

    @Test
    void udOurServerCClient() throws Exception {
        ourServerCClient(UdPingPong::new, "ibv_ud_pingpong", "-c");
    }

    @Test
    void udCServerOurClient() throws Exception {
        cServerOurClient(UdPingPong::new, "ibv_ud_pingpong", "-c");
    }

    @Test
    void srqOurServerCClient() throws Exception {
        ourServerCClient(SrqPingPong::new, "ibv_srq_pingpong", "-q", "4");
    }

    @Test
    void srqCServerOurClient() throws Exception {
        cServerOurClient(SrqPingPong::new, "ibv_srq_pingpong", "-q", "4");
    }

    @Test
    void rcWithEventsOurServerOurClient() throws Exception {
        int port = freePort();
        try (SampleRun server = SampleRun.start(new RcPingPong(), args(port, "-e"));
             SampleRun client = SampleRun.start(new RcPingPong(), args(port, "-e", host))) {
            assertEquals(0, client.awaitExit(T), client::describe);
            assertEquals(0, server.awaitExit(T), server::describe);
            assertDone(client.stdout(), client::describe);
            assertDone(server.stdout(), server::describe);
        }
    }

    /** Soft-RoCE has no on-demand paging: -o fails at the registration (EINVAL), before any TCP exchange. */
    @Test
    void odpIsRefusedOnSoftRoce() throws Exception {
        assertTrue(RdmaTestEnv.inSandbox(), "describes Soft-RoCE, which has no ODP");
        try (SampleRun ours = SampleRun.start(new RcPingPong(), args(freePort(), "-o"))) {
            assertEquals(1, ours.awaitExit(T), ours::describe);
            assertTrue(ours.stderr().startsWith("The device isn't ODP capable (ibv_reg_mr failed: EINVAL"),
                    ours::describe);
        }
    }

    private void ourServerCClient(Supplier<Object> sample, String tool, String... extra) throws Exception {
        int port = freePort();
        try (SampleRun server = SampleRun.start(sample.get(), args(port, extra))) {
            awaitListening(port, server::describe);
            try (ChildProcess client = ChildProcess.start(tmp, cArgs(tool, port, extra, host))) {
                assertEquals(0, client.awaitExit(T), client::describe);
                assertEquals(0, server.awaitExit(T), server::describe);
                assertDone(client.stdout(), client::describe);
                assertDone(server.stdout(), server::describe);
                assertTrue(!server.stdout().contains("invalid data"), server::describe);
            }
        }
    }

    private void cServerOurClient(Supplier<Object> sample, String tool, String... extra) throws Exception {
        int port = freePort();
        try (ChildProcess server = ChildProcess.start(tmp, cArgs(tool, port, extra, null))) {
            // Our client retries refused connects, so it may start before the C server listens.
            try (SampleRun client = SampleRun.start(sample.get(), args(port, concat(extra, host)))) {
                assertEquals(0, client.awaitExit(T), client::describe);
                assertEquals(0, server.awaitExit(T), server::describe);
                assertDone(client.stdout(), client::describe);
                assertDone(server.stdout(), server::describe);
                assertTrue(!server.stdout().contains("invalid data"), server::describe);
            }
        }
    }

    private String[] args(int port, String... extra) {
        List<String> a = new ArrayList<>(List.of("-d", device, "-g", "1", "-n", N, "-p", Integer.toString(port),
                "--wait", "90"));
        a.addAll(List.of(extra));
        return a.toArray(String[]::new);
    }

    private String[] cArgs(String tool, int port, String[] extra, String serverHost) {
        List<String> a = new ArrayList<>(List.of(tool, "-d", device, "-g", "1", "-n", N, "-p", Integer.toString(port)));
        a.addAll(List.of(extra));
        if (serverHost != null) {
            a.add(serverHost);
        }
        return a.toArray(String[]::new);
    }

    private static String[] concat(String[] a, String b) {
        List<String> l = new ArrayList<>(List.of(a));
        l.add(b);
        return l.toArray(String[]::new);
    }

    private static void assertDone(String stdout, Supplier<String> describe) {
        assertTrue(stdout.lines().anyMatch(l -> l.matches(N + " iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter")),
                describe);
        assertTrue(stdout.lines().anyMatch(l -> l.matches("\\d+ bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec")),
                describe);
        assertTrue(stdout.contains("  remote address: LID 0x"), describe);
    }

    private static int freePort() throws IOException {
        try (ServerSocket probe = new ServerSocket(0)) {
            return probe.getLocalPort();
        }
    }

    /**
     * Waits until a TCP socket listens on {@code port} (from /proc/net/tcp and tcp6): the C client tries
     * to connect once and gives up, and probing with a connect would use up our server's one accept.
     */
    static void awaitListening(int port, Supplier<String> describe) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        while (System.nanoTime() - deadline < 0) {
            for (String f : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                for (String line : Files.readAllLines(Path.of(f))) {
                    String[] cols = line.trim().split("\\s+");
                    if (cols.length > 3 && cols[1].endsWith(String.format(":%04X", port)) && cols[3].equals("0A")) {
                        return;
                    }
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("nothing listens on TCP port " + port + " within "
                + T + ": " + describe.get());
    }
}
