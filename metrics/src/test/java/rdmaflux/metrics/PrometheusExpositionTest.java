package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.Set;
import java.util.TreeSet;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import rdmaflux.cm.RdmaRecorder;

/** What Prometheus sees, and what recording costs in allocations, with the registry users scrape. */
class PrometheusExpositionTest {

    @Test
    void prometheusNamesAreTheDocumentedOnes() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        MicrometerRdmaRecorder.of(registry);
        Set<String> families = new TreeSet<>();
        for (String line : registry.scrape().split("\n")) {
            if (line.startsWith("# TYPE ")) {
                String[] f = line.split(" ");
                families.add(f[2] + " " + f[3]);
            }
        }
        assertEquals(new TreeSet<>(Set.of(
                "rdmaflux_accepts_total counter",
                "rdmaflux_cm_events_total counter",
                "rdmaflux_completion_errors_total counter",
                "rdmaflux_connect_step_seconds histogram",
                "rdmaflux_connect_step_seconds_max gauge",
                "rdmaflux_connections_active gauge",
                "rdmaflux_connects_total counter",
                "rdmaflux_cq_completions_total counter",
                "rdmaflux_cq_polls_total counter",
                "rdmaflux_credit_waits_total counter",
                "rdmaflux_messages_received_bytes_total counter",
                "rdmaflux_messages_received_total counter",
                "rdmaflux_messages_sent_bytes_total counter",
                "rdmaflux_messages_sent_total counter",
                "rdmaflux_multicast_datagrams_dropped_total counter",
                "rdmaflux_multicast_datagrams_received_bytes_total counter",
                "rdmaflux_multicast_datagrams_received_total counter",
                "rdmaflux_multicast_datagrams_sent_bytes_total counter",
                "rdmaflux_multicast_datagrams_sent_total counter",
                "rdmaflux_multicast_groups gauge",
                "rdmaflux_operation_latency_seconds histogram",
                "rdmaflux_operation_latency_seconds_max gauge",
                "rdmaflux_work_requests_outstanding gauge")), families);
    }

    @Test
    void latencyHistogramHasTheFixedBuckets() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        MicrometerRdmaRecorder r = MicrometerRdmaRecorder.of(registry);
        r.operationLatency("send", 3_000); // 3 us: first counted in the 5 us bucket
        String text = registry.scrape();
        assertTrue(text.contains("rdmaflux_operation_latency_seconds_bucket{op=\"send\",le=\"2.0E-6\"} 0"), text);
        assertTrue(text.contains("rdmaflux_operation_latency_seconds_bucket{op=\"send\",le=\"5.0E-6\"} 1"), text);
        assertTrue(text.contains("rdmaflux_operation_latency_seconds_bucket{op=\"send\",le=\"+Inf\"} 1"), text);
        assertEquals(RecorderMeters.LATENCY_BUCKETS.length + 1,
                text.lines().filter(l -> l.startsWith("rdmaflux_operation_latency_seconds_bucket{op=\"send\"")).count());
    }

    @Test
    void configuredBucketsReplaceTheDefaults() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        MicrometerRdmaRecorder r = MicrometerRdmaRecorder.builder(registry)
                .operationLatencyBuckets(java.time.Duration.ofNanos(50_000), java.time.Duration.ofMillis(1))
                .connectStepBuckets(java.time.Duration.ofMillis(250))
                .build();
        r.operationLatency("read", 60_000); // 60 us: above the first bucket, inside the second
        r.stepDuration(rdmaflux.cm.Step.ROUTE, 1_000_000);
        String text = registry.scrape();
        assertTrue(text.contains("rdmaflux_operation_latency_seconds_bucket{op=\"read\",le=\"5.0E-5\"} 0"), text);
        assertTrue(text.contains("rdmaflux_operation_latency_seconds_bucket{op=\"read\",le=\"0.001\"} 1"), text);
        assertEquals(3, text.lines()
                .filter(l -> l.startsWith("rdmaflux_operation_latency_seconds_bucket{op=\"read\"")).count(),
                "two boundaries and +Inf");
        assertTrue(text.contains("rdmaflux_connect_step_seconds_bucket{step=\"route\",le=\"0.25\"} 1"), text);
        assertEquals(2, text.lines()
                .filter(l -> l.startsWith("rdmaflux_connect_step_seconds_bucket{step=\"route\"")).count());
    }

    /**
     * The per-message calls a connection makes (post, poll, completion, receive, repost) must not
     * allocate: after warm-up, a million of them may allocate no more than a few TLAB refills' worth
     * that the JIT or a histogram rotation might cause, far below one byte per call.
     */
    @Test
    void perMessageRecordingDoesNotAllocate() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        assertNoAllocationPerMessage(registry, MicrometerRdmaRecorder.of(registry));
    }

    /**
     * A connection whose connect was observed records through the observing recorder's attempt: its
     * per-message calls forward to the meters and allocate nothing either (the observation allocated once,
     * when the attempt began, and has ended).
     */
    @Test
    void perMessageRecordingOfAnObservedConnectionDoesNotAllocate() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        io.micrometer.observation.ObservationRegistry observations = io.micrometer.observation.ObservationRegistry.create();
        observations.observationConfig().observationHandler(context -> true); // a real, non-noop registry
        RdmaRecorder attempt = RdmaObservations.recorder(observations, MicrometerRdmaRecorder.of(registry))
                .attempt(false, new java.net.InetSocketAddress("192.0.2.1", 7471), reactor.util.context.Context.empty());
        attempt.connectOutcome(false, RdmaRecorder.Outcome.SUCCESS, (Throwable) null);
        assertTrue(attempt.getClass().getName().contains("ObservingRecorder"), "the attempt is the observing one");
        assertNoAllocationPerMessage(registry, attempt);
    }

    private static void assertNoAllocationPerMessage(PrometheusMeterRegistry registry, RdmaRecorder r) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 200_000; i++) {
            oneMessage(r, i);
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        int n = 1_000_000;
        for (int i = 0; i < n; i++) {
            oneMessage(r, i);
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertTrue(allocated < n / 10, "allocated " + allocated + " bytes for " + n + " messages");
        assertEquals(1_200_000, registry.get("rdmaflux.messages.sent").counter().count());
    }

    private static void oneMessage(RdmaRecorder r, int i) {
        r.outstanding(1);
        r.pollBatch(1 + (i & 7));
        r.outstanding(-1);
        r.messageSent(4096);
        r.operationLatency("send", 2_000 + (i & 1023));
        r.outstanding(-1);
        r.messageReceived(4096);
        r.outstanding(1);
    }
}
