package rdmaflux.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/** The README's run command, end to end on the real device, on the class path and on the module path. */
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
        assertDemoOutput(text);
    }

    /**
     * The three library jars are named modules: the demo runs with them on the module path, native
     * access granted to {@code rdmaflux.verbs} alone, and any other module's restricted call denied.
     * A wrong module descriptor or a missing native-access grant fails here, not in a user's build.
     * Without -a, the demo takes the address of the first active RDMA port, as on a host with a NIC.
     */
    @Test
    void demoRunsOnTheModulePath() throws IOException, InterruptedException, URISyntaxException {
        Path target = Path.of(Demo.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getParent();
        Path jar;
        try (Stream<Path> files = Files.list(target)) {
            jar = files.filter(p -> p.getFileName().toString().matches("rdmaflux-samples-[^-]+(-SNAPSHOT)?\\.jar"))
                    .findFirst().orElseThrow(() -> new AssertionError("no samples jar in " + target + ": run ./mvnw verify"));
        }
        String modulePath = jar + ":" + Files.readString(target.resolve("runtime-classpath.txt")).strip();
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-ea", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "--module-path", modulePath,
                "--enable-native-access=rdmaflux.verbs", "--illegal-native-access=deny",
                "-m", "rdmaflux.samples/rdmaflux.samples.Demo", "-C", "3");
        // Neither -a nor the sandbox's variable: the demo must find the RDMA interface's address itself.
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().remove("RDMAFLUX_SANDBOX_ADDR");
        Process p = pb.start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "demo did not exit");
        System.out.print(text);
        assertEquals(0, p.exitValue(), text);
        assertTrue(text.contains("no -a/--address given: using " + RdmaTestEnv.address().getHostAddress() + " ("), text);
        assertDemoOutput(text);
    }

    private static void assertDemoOutput(String text) {
        assertTrue(text.contains("client: ping 3 -> ping 3"), text);
        assertTrue(text.contains("server memory now says: \"written by RDMA WRITE\""), text);
        assertTrue(text.contains("RDMA read got 0x5eedcafe"), text);
        // The client sent 3 pings; the server its 20-byte memory descriptor and 3 echoes: 7 messages,
        // 3 x 6 x 2 + 20 = 56 bytes, counted by the Micrometer recorder both connections share.
        assertTrue(text.matches("(?s).*rdmaflux\\.messages\\.sent\\s+count\\s+7\\b.*"), text);
        assertTrue(text.matches("(?s).*rdmaflux\\.messages\\.sent\\.bytes\\s+count\\s+56\\b.*"), text);
    }
}
