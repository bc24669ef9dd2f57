package rdmaflux.samples.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/** The RC example's server and client in two threads, QP addresses exchanged over TCP on the test address. */
class RcExampleIT {

    @Test
    void sendWriteAndReadAreVerifiedOnBothSides() throws Exception {
        String addr = RdmaTestEnv.address().getHostAddress();
        String device = RdmaTestEnv.device();
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String[] common = {"-d", device, "-p", Integer.toString(port), "-n", "10", "-s", "1000", "--wait", "30"};
        StringWriter serverOut = new StringWriter();
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> new CommandLine(new RcExample())
                .setOut(new PrintWriter(serverOut)).setErr(new PrintWriter(serverOut)).execute(common));
        StringWriter clientOut = new StringWriter();
        String[] clientArgs = java.util.stream.Stream.concat(java.util.Arrays.stream(common),
                java.util.stream.Stream.of(addr)).toArray(String[]::new);
        int clientRc = new CommandLine(new RcExample()).setOut(new PrintWriter(clientOut))
                .setErr(new PrintWriter(clientOut)).execute(clientArgs);
        int serverRc = server.get(120, TimeUnit.SECONDS);
        String s = serverOut.toString();
        String c = clientOut.toString();
        System.out.print(s + c);

        assertEquals(0, clientRc, c);
        assertEquals(0, serverRc, s);
        for (String out : new String[] {s, c}) {
            assertTrue(out.contains("RESET -> INIT -> RTR -> RTS"), out);
            assertTrue(out.contains("GID ::ffff:" + addr), out);
        }
        assertTrue(c.contains("client: 10 SEND round trips of 1000 bytes verified"), c);
        assertTrue(c.contains("client: RDMA WRITE of 1000 bytes verified by the server"), c);
        assertTrue(c.contains("client: RDMA READ of 1000 bytes verified"), c);
        assertTrue(s.contains("server: 10 SENDs of 1000 bytes received, verified and echoed"), s);
        assertTrue(s.contains("server: RDMA WRITE of 1000 bytes from the client verified"), s);
        assertTrue(s.contains("server: RDMA READ of 1000 bytes by the client: READ_OK"), s);
    }

    @Test
    void destinationLineRoundTrips() {
        // Pure codec check, next to the flow that depends on it.
        String line = "0000:000011:3f2a10:00000000000000000000ffffc0000201:3:00007f3c5c001000:00000000000003e8:00000201";
        Destination d = Destination.parse(line);
        assertEquals(0x11, d.endpoint().qpNumber());
        assertEquals(0x3f2a10, d.endpoint().psn());
        assertEquals(0x7f3c5c001000L, d.buffer().address());
        assertEquals(1000, d.buffer().length());
        assertEquals(0x201, d.buffer().rkey());
        assertEquals(line, d.toWire());
    }
}
