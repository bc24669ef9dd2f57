package rdmaflux.samples.rsocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/** The RSocket sample, server and client in one process, as {@code scripts/sample rsocket} runs it. */
class RSocketSampleIT {
    @Test
    void everyInteractionCompletes() {
        StringWriter buf = new StringWriter();
        int rc = new CommandLine(new RSocketSample()).setOut(new PrintWriter(buf))
                .execute("-a", RdmaTestEnv.address().getHostAddress(), "-p", "7879", "-n", "12");
        String out = buf.toString();
        System.out.print(out);
        assertEquals(0, rc, out);
        assertTrue(out.contains("client: request-response: hello, RDMA"), out);
        assertTrue(out.contains("client: request-stream with backpressure: 12 items, last \"item 12 of 12\""), out);
        assertTrue(out.contains("client: channel: [ONE, TWO, THREE]"), out);
        assertTrue(out.contains("client: done"), out);
    }
}
