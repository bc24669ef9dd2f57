package rdmaflux.samples.pingpong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rdmaflux.samples.SampleRun;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Soft-RoCE has no XRC: ibv_xsrq_pingpong stops at ibv_open_xrcd with errno 95 (EOPNOTSUPP), and so
 * must our sample, saying why. Only in the sandbox: on hardware with XRC both would go further.
 */
class XsrqPingPongIT {
    private static final Duration T = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    @Test
    void withoutXrcBothStopAtTheDomainWithEopnotsupp() throws Exception {
        assertTrue(RdmaTestEnv.inSandbox(), "this test describes Soft-RoCE, which has no XRC");
        String device = RdmaTestEnv.device();
        try (ChildProcess c = ChildProcess.start(tmp, "ibv_xsrq_pingpong", "-d", device, "-g", "1");
             SampleRun ours = SampleRun.start(new XsrqPingPong(), "-d", device, "-g", "1")) {
            assertEquals(1, c.awaitExit(T), c::describe);
            assertTrue(c.stderr().contains("Couldn't Open the XRC Domain 95"), c::describe);
            assertEquals(1, ours.awaitExit(T), ours::describe);
            assertEquals("Couldn't Open the XRC Domain 95 (EOPNOTSUPP): device " + device + " has no XRC support; "
                    + "xsrq-pingpong needs XRC domains, XRC SRQs and XRC QPs (Soft-RoCE implements none of them)\n",
                    ours.stderr(), ours::describe);
        }
    }
}
