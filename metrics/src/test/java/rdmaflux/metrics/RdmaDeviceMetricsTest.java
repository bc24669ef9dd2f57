package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The parts of the device binder that need no device: sysfs counters and the netlink parser. */
class RdmaDeviceMetricsTest {
    @TempDir
    Path dir;

    @Test
    void hwCountersAreReadOnEveryScrape() throws IOException {
        Files.writeString(dir.resolve("rcvd_rnr_err"), "5\n");
        Files.writeString(dir.resolve("send_rnr_err"), "0\n");
        Files.writeString(dir.resolve("lifespan"), "12\n");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RdmaDeviceMetrics binder = new RdmaDeviceMetrics(dir, Tags.empty(), false);
        binder.bindHwCounters(registry, Tags.of("device", "rxe0", "port", "1"), dir);
        assertEquals(5, registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).tags("device", "rxe0", "port", "1",
                "counter", "rcvd_rnr_err").functionCounter().count());
        assertEquals(0, registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).tag("counter", "send_rnr_err")
                .functionCounter().count());
        assertNull(registry.find(RdmaDeviceMetrics.PORT_HW_COUNTER).tag("counter", "lifespan").functionCounter(),
                "lifespan is a setting, not a counter");
        Files.writeString(dir.resolve("rcvd_rnr_err"), "7\n");
        assertEquals(7, registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).tag("counter", "rcvd_rnr_err")
                .functionCounter().count());
        binder.close();
        assertTrue(Double.isNaN(registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).tag("counter", "rcvd_rnr_err")
                .functionCounter().count()));
    }

    /**
     * Regression for a CI failure: Micrometer holds a function counter's state object weakly, and the sysfs
     * path behind each hardware counter was referenced by nothing else, so after a GC the counter froze at its
     * last value. Whether a given collection clears the reference depends on the JVM; a standalone program
     * showed the freeze every time, this test shows the counter reads on after collections.
     */
    @Test
    void hwCountersSurviveGarbageCollection() throws IOException {
        Files.writeString(dir.resolve("retry_exceeded_err"), "0\n");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        bindCounters(registry);
        FunctionCounter counter = registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).functionCounter();
        assertEquals(0, counter.count());
        WeakReference<Object> canary = new WeakReference<>(new Object());
        for (int i = 0; i < 50 && canary.get() != null; i++) {
            System.gc();
        }
        assertNull(canary.get(), "a collection ran");
        Files.writeString(dir.resolve("retry_exceeded_err"), "1\n");
        assertEquals(1, counter.count());
    }

    /** Binds in a frame of its own so that nothing on the test's stack keeps the binder's objects alive. */
    private void bindCounters(SimpleMeterRegistry registry) {
        new RdmaDeviceMetrics(dir, Tags.empty(), false).bindHwCounters(registry, Tags.empty(), dir);
    }

    @Test
    void missingCounterDirectoryBindsNothing() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new RdmaDeviceMetrics(dir, Tags.empty(), false).bindHwCounters(registry, Tags.empty(), dir.resolve("nope"));
        assertTrue(registry.getMeters().isEmpty());
    }

    @Test
    void deviceCountMatchesLibibverbs() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (RdmaDeviceMetrics binder = new RdmaDeviceMetrics()) {
            binder.bindTo(registry);
            int devices;
            try {
                devices = rdmaflux.verbs.Rdma.devices().size();
            } catch (rdmaflux.verbs.RdmaException e) {
                devices = 0;
            }
            assertEquals(devices, registry.get(RdmaDeviceMetrics.DEVICES).gauge().value());
        }
    }

    // ---------------------------------------------------------------- netlink

    /** Builds what the kernel answers to RDMA_NLDEV_CMD_RES_GET for one device, then NLMSG_DONE. */
    private static byte[] reply(String device, Map<String, Long> counts) {
        ByteBuffer attrs = ByteBuffer.allocate(4096).order(ByteOrder.nativeOrder());
        attr(attrs, 1, ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(0, 3).array()); // DEV_INDEX
        attr(attrs, 2, (device + "\0").getBytes(StandardCharsets.US_ASCII)); // DEV_NAME
        ByteBuffer summary = ByteBuffer.allocate(2048).order(ByteOrder.nativeOrder());
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            ByteBuffer entry = ByteBuffer.allocate(256).order(ByteOrder.nativeOrder());
            attr(entry, 17, (e.getKey() + "\0").getBytes(StandardCharsets.US_ASCII));
            attr(entry, 18, ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(0, e.getValue()).array());
            attr(summary, 16 | 0x8000, java.util.Arrays.copyOf(entry.array(), entry.position()));
        }
        attr(attrs, 15 | 0x8000, java.util.Arrays.copyOf(summary.array(), summary.position()));
        ByteBuffer msg = ByteBuffer.allocate(8192).order(ByteOrder.nativeOrder());
        int len = 16 + attrs.position();
        msg.putInt(len).putShort((short) ((5 << 10) + 9)).putShort((short) 2).putInt(1).putInt(0);
        msg.put(attrs.array(), 0, attrs.position());
        msg.putInt(16).putShort((short) 3).putShort((short) 2).putInt(1).putInt(0); // NLMSG_DONE
        return java.util.Arrays.copyOf(msg.array(), msg.position());
    }

    private static void attr(ByteBuffer b, int type, byte[] payload) {
        b.putShort((short) (4 + payload.length)).putShort((short) type).put(payload);
        while (b.position() % 4 != 0) {
            b.put((byte) 0);
        }
    }

    @Test
    void parsesTheResourceSummary() {
        byte[] bytes = reply("rxe0", Map.of("pd", 3L, "cq", 4L, "qp", 5L, "cm_id", 2L, "mr", 7L));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(bytes.length);
            MemorySegment.copy(bytes, 0, buf, ValueLayout.JAVA_BYTE, 0, bytes.length);
            Map<String, Map<String, Long>> out = new HashMap<>();
            assertTrue(ResourceCounts.parseMessages(buf, bytes.length, out));
            assertEquals(Map.of("rxe0", Map.of("pd", 3L, "cq", 4L, "qp", 5L, "cm_id", 2L, "mr", 7L)), out);
            // A reply split across reads: the first part alone is not the end of the dump.
            Map<String, Map<String, Long>> partial = new HashMap<>();
            assertFalse(ResourceCounts.parseMessages(buf, bytes.length - 16, partial));
            assertEquals(5L, partial.get("rxe0").get("qp"));
        }
    }

    @Test
    void netlinkErrorsAreReported() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(20);
            buf.set(ValueLayout.JAVA_INT, 0, 20);
            buf.set(ValueLayout.JAVA_SHORT, 4, (short) 2); // NLMSG_ERROR
            buf.set(ValueLayout.JAVA_INT, 16, -1);
            assertThrows(IllegalStateException.class, () -> ResourceCounts.parseMessages(buf, 20, new HashMap<>()));
        }
    }
}
