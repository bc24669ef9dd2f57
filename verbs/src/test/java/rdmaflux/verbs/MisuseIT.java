package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every misuse of the verbs API that could hand the provider freed or closed memory, run in a child JVM
 * ({@link MisuseMain}) on the real device: a crash there (SIGSEGV, hs_err) is an abnormal exit and fails
 * the test, and each case must end with the typed exception it documents, or, for an object closed while
 * posted requests use it, with the facts of its deferred destroy. One child runs all cases, since a JVM
 * start costs 10-20 s under the sandbox's emulation.
 */
class MisuseIT {
    private static final String CLOSED = "java.lang.IllegalStateException: ";

    @Test
    void noMisuseCrashesTheJvmAndEachFailsWithItsException(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("out.txt");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(List.of(java, "-ea", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC", "-Xmx256m", "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"),
                "-cp", System.getProperty("java.class.path"), MisuseMain.class.getName()))
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        boolean exited = p.waitFor(300, TimeUnit.SECONDS);
        if (!exited) {
            p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        String text = Files.readString(out, StandardCharsets.UTF_8);
        System.out.println(text);
        assertTrue(exited, "the child JVM hung:\n" + text);
        try (var files = Files.list(dir)) {
            assertFalse(files.anyMatch(f -> f.getFileName().toString().startsWith("hs_err")),
                    "the child JVM crashed:\n" + text);
        }
        assertEquals(0, p.exitValue(), "the child JVM did not exit normally:\n" + text);
        assertTrue(text.contains("\nDONE"), text);

        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("post-send-closed-mr", CLOSED + "MemoryRegion[");
        expected.put("sge-closed-mr", CLOSED + "MemoryRegion[");
        expected.put("post-receive-closed-mr", CLOSED + "MemoryRegion[");
        expected.put("post-send-freed-arena", CLOSED + "the memory of MemoryRegion[");
        expected.put("inline-send-freed-segment", CLOSED + "the memory at 0x");
        expected.put("ud-send-closed-ah", CLOSED + "AddressHandle");
        expected.put("post-send-closed-qp", CLOSED + "QueuePair[");
        expected.put("post-send-closed-cq", CLOSED + "QueuePair[");
        expected.put("post-send-closed-pd", CLOSED);
        expected.put("extended-sge-closed-mr", CLOSED + "MemoryRegion[");
        expected.put("extended-inline-freed-segment", CLOSED);
        expected.put("poll-closed-cq", CLOSED + "CompletionQueue");
        expected.put("poll-cq-of-closed-channel", CLOSED + "CompletionQueue");
        expected.put("srq-post-after-close", CLOSED + "SharedReceiveQueue");
        expected.put("close-mr-under-bound-window", CLOSED + "MemoryRegion[");
        expected.put("ibv-dereg-mr-under-bound-window", "rdmaflux.verbs.RdmaException: ibv_dereg_mr failed: EINVAL");
        expected.put("post-bind-of-window-closed-since", CLOSED + "MemoryWindow[");
        expected.put("bind-closed-type-1-window", CLOSED + "MemoryWindow[");
        // Objects closed while posted requests use them: closed at once, destroyed once the requests ended.
        expected.put("mr-closed-with-write-outstanding", "closed, not destroyed; a new post refused; still "
                + "registered; write completed SUCCESS; deregistered by the poll");
        expected.put("extended-mr-closed-with-write-outstanding", "closed, still registered; write completed "
                + "SUCCESS; deregistered by the poll");
        expected.put("mr-closed-with-receive-outstanding", "closed, still registered; receive completed SUCCESS; "
                + "the data landed; deregistered by the poll");
        expected.put("owned-region-closed-with-receive-outstanding", "closed, not destroyed; its memory still "
                + "allocated; receive completed SUCCESS; deregistered, then its memory freed");
        expected.put("ah-closed-with-ud-send-outstanding", "closed, not destroyed; a new send refused; send and "
                + "receive completed SUCCESS; destroyed by the poll");
        expected.put("qp-closed-with-receives-outstanding", "region closed, still registered; deregistered by the "
                + "QP's close; a region closed after its QP deregistered at once");
        expected.put("pd-closed-with-requests-outstanding", "QPs destroyed; regions and PD destroyed; the kernel "
                + "agrees; the CQ still polls");
        expected.put("window-closed-with-bind-outstanding", "window closed, not destroyed; its region still held; "
                + "deallocated by the poll; then the region closes");
        expected.put("srq-regions-closed-with-receives-outstanding", "both closed, not destroyed; send and receive "
                + "completed SUCCESS; the poll deregistered the taken receive's region only; closing the SRQ (and its "
                + "QP) deregistered the other");
        expected.put("type-2-window-closed-then-its-qp", "window closed, not destroyed; both destroyed by the QP's "
                + "close; without waiting; then the region closes");
        for (Map.Entry<String, String> e : expected.entrySet()) {
            String line = text.lines().filter(l -> l.startsWith("CASE " + e.getKey() + " -> ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no line for " + e.getKey() + ":\n" + text));
            assertTrue(line.startsWith("CASE " + e.getKey() + " -> " + e.getValue()), line);
        }
        String held = text.lines().filter(l -> l.startsWith("CASE close-mr-under-bound-window")).findFirst().orElseThrow();
        assertTrue(held.contains("is held by 1 memory window"), held);
        String closedPd = text.lines().filter(l -> l.startsWith("CASE post-send-closed-pd")).findFirst().orElseThrow();
        assertTrue(closedPd.endsWith(" is closed"), closedPd);
    }
}
