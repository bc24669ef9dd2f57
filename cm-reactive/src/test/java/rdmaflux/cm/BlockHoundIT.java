package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;

/**
 * rdmaflux under BlockHound on the device: an echo (event-driven and busy-polling), a message larger than the
 * receive buffers, a multicast round trip and RSocket request-response report no blocking call on a loop
 * thread, and the application's {@code block()} on a loop fails at once ({@link BlockHoundScenarios}).
 *
 * <p>In a JVM of its own, which this test starts (same java, class path and environment): BlockHound cannot be
 * uninstalled, and installed in the launcher's JVM it would instrument the JDK for every test class that runs
 * after this one (scripts/it runs them all in one JVM), slowing their waits and polices; it also needs
 * {@code -XX:+AllowRedefinitionToAddDeleteMethods}, which the launcher's JVM does not have. The child runs
 * {@link BlockHoundScenarios} with JUnit's console launcher (on scripts/it's class path), without the lane's
 * progress file, so that the lane's report counts this class only; this test passes when every scenario
 * passed and none was skipped.
 */
class BlockHoundIT {
    /** The child's JVM start, BlockHound's instrumentation of the JDK and the scenarios, under emulation. */
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofMinutes(8));
    private static final Pattern COUNT = Pattern.compile("\\[\\s*(\\d+) tests (found|successful|failed|aborted|skipped)\\s*]");

    @Test
    void noBlockingCallOnTheLoopsAndBlockFailsFastThere(@TempDir Path dir) throws Exception {
        RdmaTestEnv.address(); // fails here, rather than in the child, without an RDMA test address
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        try (ChildProcess child = ChildProcess.start(dir, "env", "-u", "RDMAFLUX_IT_PROGRESS",
                java, "-ea", "--enable-native-access=ALL-UNNAMED",
                "-XX:+AllowRedefinitionToAddDeleteMethods", "-XX:+EnableDynamicAgentLoading",
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m",
                "-cp", System.getProperty("java.class.path"),
                "org.junit.platform.console.ConsoleLauncher", "execute",
                "--disable-banner", "--disable-ansi-colors", "--details=tree",
                "--select-class=" + BlockHoundScenarios.class.getName())) {
            int exit = child.awaitExit(T);
            String out = child.stdout();
            int[] counts = counts(out);
            assertTrue(counts[0] > 0, "no scenario found: " + child.describe());
            assertEquals(counts[0], counts[1], "scenarios found and passed: " + child.describe());
            assertEquals(0, counts[2] + counts[3] + counts[4], "scenarios failed, aborted or skipped: " + child.describe());
            assertEquals(0, exit, child.describe());
        }
    }

    /** {@return the launcher's summary: tests found, successful, failed, aborted, skipped} */
    private static int[] counts(String out) {
        int[] counts = new int[5];
        java.util.List<String> kinds = java.util.List.of("found", "successful", "failed", "aborted", "skipped");
        Matcher m = COUNT.matcher(out);
        while (m.find()) {
            counts[kinds.indexOf(m.group(2))] = Integer.parseInt(m.group(1));
        }
        return counts;
    }
}
