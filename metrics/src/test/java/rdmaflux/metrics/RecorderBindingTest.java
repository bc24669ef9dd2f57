package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import rdmaflux.cm.RdmaRecorder.Outcome;

/** The recorder as a {@code MeterBinder}, and the builder's bucket settings with their checks. */
class RecorderBindingTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @Test
    void anUnboundRecorderRecordsNothingUntilBoundThenEverything() {
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder().tags("application", "orders").build();
        recorder.messageSent(100);
        recorder.activeConnections(1);
        IllegalStateException unbound = assertThrows(IllegalStateException.class, recorder::registry);
        assertTrue(unbound.getMessage().contains("bindTo(registry)"), unbound.getMessage());
        assertTrue(registry.getMeters().isEmpty());

        recorder.bindTo(registry);
        assertSame(registry, recorder.registry());
        assertEquals(0, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).tag("application", "orders").counter()
                .count(), "what was recorded before binding went nowhere");
        recorder.messageSent(100);
        recorder.connectOutcome(true, Outcome.FAILURE, "Rejected");
        assertEquals(1, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).counter().count());
        assertEquals(100, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT_BYTES).counter().count());
        assertEquals(1, registry.get(MicrometerRdmaRecorder.ACCEPTS)
                .tags(RdmaTags.OUTCOME, RdmaTags.FAILURE, RdmaTags.ERROR, "Rejected").counter().count());
    }

    @Test
    void bindingAgainToItsOwnRegistryChangesNothing() {
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.of(registry);
        int meters = registry.getMeters().size();
        recorder.messageSent(1);
        recorder.bindTo(registry); // what Spring Boot does with every MeterBinder bean
        recorder.bindTo(registry);
        assertEquals(meters, registry.getMeters().size());
        assertEquals(1, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).counter().count());
    }

    @Test
    void bindingToASecondRegistryIsRefusedWithTheWayOut() {
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder().build();
        recorder.bindTo(registry);
        SimpleMeterRegistry other = new SimpleMeterRegistry();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> recorder.bindTo(other));
        assertTrue(e.getMessage().contains("CompositeMeterRegistry"), e.getMessage());
        assertTrue(other.getMeters().isEmpty());
    }

    /** What the binder is for: the registry's filters, configured before binding, apply to every meter. */
    @Test
    void meterFiltersConfiguredBeforeBindingApply() {
        registry.config().meterFilter(MeterFilter.denyNameStartsWith(MicrometerRdmaRecorder.CM_EVENTS));
        registry.config().meterFilter(MeterFilter.renameTag("rdmaflux", RdmaTags.ERROR, "exception"));
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder().build();
        recorder.bindTo(registry);
        recorder.connectOutcome(false, Outcome.FAILURE, "Rejected");
        recorder.cmEvent(rdmaflux.verbs.CmEventType.ESTABLISHED);
        assertNull(registry.find(MicrometerRdmaRecorder.CM_EVENTS).meter());
        assertEquals(1, registry.get(MicrometerRdmaRecorder.CONNECTS).tag("exception", "Rejected").counter().count());
        for (Meter m : registry.getMeters()) {
            assertNull(m.getId().getTag(RdmaTags.ERROR), m.getId().toString());
        }
    }

    @Test
    void aBoundRecorderWithTheRemoteTagMakesPeersInItsRegistry() {
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder().remoteAddressTag(1).build();
        assertSame(recorder, recorder.forPeer(new InetSocketAddress("192.0.2.1", 1)), "unbound: no peers yet");
        recorder.bindTo(registry);
        recorder.forPeer(new InetSocketAddress("192.0.2.1", 1)).messageSent(1);
        recorder.forPeer(new InetSocketAddress("192.0.2.2", 1)).messageSent(1);
        assertEquals(1, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).tag(RdmaTags.REMOTE, "192.0.2.1")
                .counter().count());
        assertEquals(1, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).tag(RdmaTags.REMOTE, RdmaTags.OTHER)
                .counter().count());
        assertNotNull(registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).tag(RdmaTags.REMOTE, RdmaTags.UNKNOWN)
                .counter());
    }

    @Test
    void bucketsMustBePositiveAndAscending() {
        MicrometerRdmaRecorder.Builder b = MicrometerRdmaRecorder.builder(registry);
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> b.operationLatencyBuckets(Duration.ZERO));
        assertTrue(zero.getMessage().contains("operationLatencyBuckets: boundaries must be positive"),
                zero.getMessage());
        IllegalArgumentException unordered = assertThrows(IllegalArgumentException.class,
                () -> b.connectStepBuckets(Duration.ofSeconds(2), Duration.ofSeconds(1)));
        assertTrue(unordered.getMessage().contains("connectStepBuckets: boundaries must ascend, boundary 1 (PT1S)"),
                unordered.getMessage());
        assertThrows(NullPointerException.class, () -> b.connectStepBuckets(Duration.ofSeconds(1), null));
    }

    @Test
    void noBucketsMeansNoHistogram() {
        MicrometerRdmaRecorder.builder(registry).operationLatencyBuckets().build();
        assertEquals(0, registry.get(MicrometerRdmaRecorder.OPERATION_LATENCY).tag(RdmaTags.OP, "send").timer()
                .takeSnapshot().histogramCounts().length);
        assertTrue(registry.get(MicrometerRdmaRecorder.CONNECT_STEP).tag(RdmaTags.STEP, "route").timer()
                .takeSnapshot().histogramCounts().length > 0, "the step buckets keep their default");
    }
}
