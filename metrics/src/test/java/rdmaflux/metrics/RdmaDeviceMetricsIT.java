package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;

/** The device binder on the real device, checked against libibverbs, sysfs and {@code rdma resource show}. */
class RdmaDeviceMetricsIT {

    @Test
    void portGaugesMatchTheDevice() throws Exception {
        String device = RdmaTestEnv.device();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (RdmaDeviceMetrics binder = new RdmaDeviceMetrics(); RdmaContext ctx = Rdma.open(device)) {
            binder.bindTo(registry);
            PortAttributes port = ctx.queryPort(1);
            assertEquals(Rdma.devices().size(), registry.get(RdmaDeviceMetrics.DEVICES).gauge().value());
            assertEquals(port.state().value(), registry.get(RdmaDeviceMetrics.PORT_STATE)
                    .tags("device", device, "port", "1").gauge().value());
            assertEquals(4, registry.get(RdmaDeviceMetrics.PORT_STATE).tags("device", device).gauge().value(),
                    "the port is ACTIVE");
            assertEquals(port.activeMtu().bytes(), registry.get(RdmaDeviceMetrics.PORT_ACTIVE_MTU)
                    .tags("device", device, "port", "1").gauge().value());

            Path hw = Path.of("/sys/class/infiniband", device, "ports", "1", "hw_counters");
            List<String> files = new ArrayList<>();
            try (var s = Files.list(hw)) {
                s.map(p -> p.getFileName().toString()).filter(n -> !n.equals("lifespan")).forEach(files::add);
            }
            assertEquals(files.size(), registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).tag("device", device)
                    .functionCounters().size());
            if (RdmaTestEnv.inSandbox()) {
                assertTrue(files.contains("rcvd_rnr_err") && files.contains("send_rnr_err"), files.toString());
            }
            for (String f : files) {
                FunctionCounter c = registry.get(RdmaDeviceMetrics.PORT_HW_COUNTER).tags("device", device,
                        "counter", f).functionCounter();
                long before = Long.parseLong(Files.readString(hw.resolve(f)).strip());
                double read = c.count();
                long after = Long.parseLong(Files.readString(hw.resolve(f)).strip());
                assertTrue(read >= before && read <= after, f + ": " + before + " <= " + read + " <= " + after);
            }
        }
    }

    @Test
    void resourceGaugesMatchRdmaResourceShow() throws Exception {
        String device = RdmaTestEnv.device();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        List<ProtectionDomain> pds = new ArrayList<>();
        try (RdmaDeviceMetrics binder = new RdmaDeviceMetrics(); RdmaContext ctx = Rdma.open(device)) {
            binder.bindTo(registry);
            agree(registry, device);
            double pdBefore = resource(registry, device, "pd");
            for (int i = 0; i < 3; i++) {
                pds.add(ctx.allocateProtectionDomain());
            }
            Map<String, Integer> tool = agree(registry, device);
            assertTrue(tool.get("pd") >= 3 + 1, "our three PDs and the kernel's own: " + tool);
            assertEquals(pdBefore + 3, resource(registry, device, "pd"), "nothing else runs during this test");
            for (ProtectionDomain pd : pds) {
                pd.close();
            }
            pds.clear();
            agree(registry, device);
            assertEquals(pdBefore, resource(registry, device, "pd"));
        } finally {
            for (ProtectionDomain pd : pds) {
                pd.close();
            }
        }
    }

    private static double resource(SimpleMeterRegistry registry, String device, String type) throws InterruptedException {
        Thread.sleep(ResourceCounts.CACHE_MILLIS + 50); // past the cache
        return registry.get(RdmaDeviceMetrics.DEVICE_RESOURCES).tags("device", device, "type", type).gauge().value();
    }

    /** Polls until the gauges and the tool agree on every type the tool prints (resources settle asynchronously). */
    private static Map<String, Integer> agree(SimpleMeterRegistry registry, String device) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        for (;;) {
            Map<String, Integer> tool = RdmaResources.snapshot();
            boolean same = true;
            StringBuilder diff = new StringBuilder();
            for (Map.Entry<String, Integer> e : tool.entrySet()) {
                double g = resource(registry, device, e.getKey());
                if (g != e.getValue()) {
                    same = false;
                    diff.append(e.getKey()).append(": gauge ").append(g).append(" tool ").append(e.getValue()).append("; ");
                }
            }
            if (same) {
                return tool;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("gauges disagree with rdma resource show: " + diff);
            }
        }
    }
}
