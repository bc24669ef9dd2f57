package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import reactor.core.Disposable;
import rdmaflux.cm.RdmaDeviceEvents;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.testing.SandboxHosts;
import rdmaflux.verbs.AsyncEvent;
import rdmaflux.verbs.AsyncEventType;

/**
 * A cut of this host's wire (qemu {@code set_link off}: the NIC loses carrier) reaches the application as
 * the device's PORT_ERR event, the restored wire as PORT_ACTIVE, and the metrics binder counts both.
 * Needs the multi-host sandbox only to cut the link from outside the VM.
 */
class DeviceEventsHostsIT {
    private static final Duration T = Duration.ofSeconds(60);

    @Test
    void portDownAndActiveEventsFromALinkCutAreStreamedAndCounted() throws Exception {
        SandboxHosts.require(2);
        String device = RdmaTestEnv.device();
        LinkedBlockingQueue<Object> events = new LinkedBlockingQueue<>();
        Disposable sub = RdmaDeviceEvents.events(device).subscribe(events::add, events::add);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (RdmaDeviceEventMetrics metrics = new RdmaDeviceEventMetrics(device, java.util.List.of())) {
            metrics.bindTo(registry);
            // Both subscriptions open their context before the cut, or they would miss the event.
            Thread.sleep(2000);
            SandboxHosts.link(SandboxHosts.self(), false);
            try {
                assertEquals(new AsyncEvent(AsyncEventType.PORT_ERR, 1, -1), next(events));
            } finally {
                SandboxHosts.link(SandboxHosts.self(), true);
            }
            assertEquals(new AsyncEvent(AsyncEventType.PORT_ACTIVE, 1, -1), next(events));
            long deadline = System.nanoTime() + T.toNanos();
            while (count(registry, device, "port_active") < 1 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(1.0, count(registry, device, "port_err"));
            assertEquals(1.0, count(registry, device, "port_active"));
        } finally {
            sub.dispose();
        }
        assertTrue(sub.isDisposed());
    }

    private static double count(SimpleMeterRegistry registry, String device, String type) {
        var c = registry.find(RdmaDeviceEventMetrics.DEVICE_EVENTS).tag("device", device).tag("type", type).counter();
        return c == null ? 0 : c.count();
    }

    private static AsyncEvent next(LinkedBlockingQueue<Object> events) throws InterruptedException {
        Object o = events.poll(T.toSeconds(), TimeUnit.SECONDS);
        if (o instanceof Throwable t) {
            throw new AssertionError("the event stream failed", t);
        }
        if (o == null) {
            throw new AssertionError("no device event within " + T);
        }
        return (AsyncEvent) o;
    }
}
