package rdmaflux.samples.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import rdmaflux.cm.RdmaRecorder;
import rdmaflux.metrics.MicrometerRdmaRecorder;

/** The metrics snippets that need no RDMA do what docs/metrics.md says next to them. */
class MetricsSnippetsTest {
    @Test
    void theFiltersConfiguredBeforeBindingApplyToTheRecordersMeters() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerRdmaRecorder recorder = MetricsSnippets.filtered(registry);
        assertSame(registry, recorder.registry());
        assertNull(registry.find("rdmaflux.multicast.groups").meter(), "multicast denied");
        recorder.connectOutcome(true, RdmaRecorder.Outcome.FAILURE, "StepTimeout");
        assertEquals(1, registry.get(MicrometerRdmaRecorder.ACCEPTS).tag("exception", "StepTimeout").counter().count());
    }

    @Test
    void theBucketsAreTheOnesGiven() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MetricsSnippets.buckets(registry).operationLatency("send", 30_000);
        var buckets = registry.get(MicrometerRdmaRecorder.OPERATION_LATENCY).tag("op", "send").timer()
                .takeSnapshot().histogramCounts();
        assertEquals(5, buckets.length);
        assertEquals(10_000, buckets[0].bucket(TimeUnit.NANOSECONDS), 1e-6);
        assertEquals(0, buckets[0].count());
        assertEquals(1, buckets[1].count(), "30 us is inside the 50 us bucket");
        assertEquals(3, registry.get(MicrometerRdmaRecorder.CONNECT_STEP).tag("step", "route").timer()
                .takeSnapshot().histogramCounts().length);
    }
}
