package rdmaflux.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/** The README's run command, end to end on the real device. */
class DemoIT {

    @Test
    void demoConnectsPingsWritesReadsAndReportsMetrics() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream old = System.out;
        int rc;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            rc = new CommandLine(new Demo()).execute("-a", RdmaTestEnv.address().getHostAddress(), "-C", "3");
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        old.print(text);
        assertEquals(0, rc, text);
        assertTrue(text.contains("client: ping 3 -> ping 3"), text);
        assertTrue(text.contains("server memory now says: \"written by RDMA WRITE\""), text);
        assertTrue(text.contains("RDMA read got 0x5eedcafe"), text);
        // The client sent 3 pings; the server its 20-byte memory descriptor and 3 echoes: 7 messages,
        // 3 x 6 x 2 + 20 = 56 bytes, counted by the Micrometer recorder both connections share.
        assertTrue(text.matches("(?s).*rdmaflux\\.messages\\.sent\\s+count\\s+7\\b.*"), text);
        assertTrue(text.matches("(?s).*rdmaflux\\.messages\\.sent\\.bytes\\s+count\\s+56\\b.*"), text);
    }
}
