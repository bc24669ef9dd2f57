package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import rdmaflux.cm.RdmaRecorder.Outcome;
import rdmaflux.cm.Step;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.WcStatus;

/** Drives the recorder directly and reads the meters back from a {@link SimpleMeterRegistry}. */
class MicrometerRdmaRecorderTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.of(registry);

    private double counter(String name, String... tags) {
        return registry.get(name).tags(tags).counter().count();
    }

    private double gauge(String name, String... tags) {
        return registry.get(name).tags(tags).gauge().value();
    }

    @Test
    void everyMeterExistsBeforeAnythingIsRecorded() {
        // SimpleMeterRegistry shows bucket counts as extra "<name>.histogram" gauges; Prometheus as _bucket.
        Set<String> names = registry.getMeters().stream().map(m -> m.getId().getName())
                .filter(n -> !n.endsWith(".histogram"))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of(
                "rdmaflux.connections.active", "rdmaflux.connects", "rdmaflux.accepts", "rdmaflux.connect.step",
                "rdmaflux.messages.sent", "rdmaflux.messages.sent.bytes", "rdmaflux.messages.received",
                "rdmaflux.messages.received.bytes", "rdmaflux.operation.latency", "rdmaflux.completion.errors",
                "rdmaflux.credit.waits", "rdmaflux.cq.polls", "rdmaflux.cq.completions", "rdmaflux.work.requests.outstanding",
                "rdmaflux.cm.events", "rdmaflux.multicast.groups", "rdmaflux.multicast.datagrams.sent",
                "rdmaflux.multicast.datagrams.sent.bytes", "rdmaflux.multicast.datagrams.received",
                "rdmaflux.multicast.datagrams.received.bytes", "rdmaflux.multicast.datagrams.dropped")), names);
        for (Meter m : registry.getMeters()) {
            String n = m.getId().getName();
            if (n.endsWith(".histogram")) {
                continue;
            }
            assertEquals(n.toLowerCase(Locale.ROOT), n);
            assertTrue(n.startsWith("rdmaflux."), n);
            assertNotNull(m.getId().getDescription(), n);
            for (io.micrometer.core.instrument.Measurement ms : m.measure()) {
                assertEquals(0.0, ms.getValue(), n + " " + ms);
            }
        }
        // Bounded tag sets, all created up front.
        assertEquals(WcStatus.values().length - 1, registry.get(MicrometerRdmaRecorder.COMPLETION_ERRORS).counters().size());
        assertEquals(CmEventType.values().length, registry.get(MicrometerRdmaRecorder.CM_EVENTS).counters().size());
        assertEquals(7, registry.get(MicrometerRdmaRecorder.OPERATION_LATENCY).timers().size());
        assertEquals(Step.values().length - 1, registry.get(MicrometerRdmaRecorder.CONNECT_STEP).timers().size());
        assertEquals("bytes", registry.get(MicrometerRdmaRecorder.MESSAGES_SENT_BYTES).counter().getId().getBaseUnit());
    }

    @Test
    void connectsAndAcceptsByOutcomeAndError() {
        recorder.connectOutcome(false, Outcome.SUCCESS, (String) null);
        recorder.connectOutcome(false, Outcome.SUCCESS, (String) null);
        recorder.connectOutcome(false, Outcome.FAILURE, "Rejected");
        recorder.connectOutcome(false, Outcome.FAILURE, "Rejected");
        recorder.connectOutcome(false, Outcome.FAILURE, "StepTimeout");
        recorder.connectOutcome(false, Outcome.CANCELLED, (String) null);
        recorder.connectOutcome(true, Outcome.SUCCESS, (String) null);
        recorder.connectOutcome(true, Outcome.FAILURE, (String) null);
        assertEquals(2, counter("rdmaflux.connects", "outcome", "success", "error", "none"));
        assertEquals(2, counter("rdmaflux.connects", "outcome", "failure", "error", "Rejected"));
        assertEquals(1, counter("rdmaflux.connects", "outcome", "failure", "error", "StepTimeout"));
        assertEquals(1, counter("rdmaflux.connects", "outcome", "cancelled", "error", "none"));
        assertEquals(1, counter("rdmaflux.accepts", "outcome", "success", "error", "none"));
        assertEquals(1, counter("rdmaflux.accepts", "outcome", "failure", "error", "unknown"));
        assertEquals(0, counter("rdmaflux.accepts", "outcome", "failure", "error", "other"));
    }

    @Test
    void failureErrorsAreCapped() {
        for (int i = 0; i < RecorderMeters.MAX_ERRORS + 10; i++) {
            recorder.connectOutcome(false, Outcome.FAILURE, "Cause" + i);
        }
        // MAX_ERRORS distinct causes, then "other" for the 10 beyond, plus the pre-created "other".
        long failureSeries = registry.get("rdmaflux.connects").tag("outcome", "failure").counters().size();
        assertEquals(RecorderMeters.MAX_ERRORS + 1, failureSeries);
        assertEquals(10, counter("rdmaflux.connects", "outcome", "failure", "error", "other"));
        assertEquals(1, counter("rdmaflux.connects", "outcome", "failure", "error", "Cause0"));
    }

    @Test
    void stepTimers() {
        recorder.stepDuration(Step.ADDRESS, 1_000_000);
        recorder.stepDuration(Step.ADDRESS, 3_000_000);
        recorder.stepDuration(Step.ROUTE, 2_000_000);
        recorder.stepDuration(Step.CONNECT, 5_000_000);
        recorder.stepDuration(Step.DISCONNECT, 6_000_000);
        recorder.stepDuration(Step.TRANSFER, 7); // not a step that finishes: ignored
        Timer address = registry.get("rdmaflux.connect.step").tag("step", "address").timer();
        assertEquals(2, address.count());
        assertEquals(4.0, address.totalTime(TimeUnit.MILLISECONDS), 1e-9);
        assertEquals(1, registry.get("rdmaflux.connect.step").tag("step", "route").timer().count());
        assertEquals(1, registry.get("rdmaflux.connect.step").tag("step", "connect").timer().count());
        assertEquals(0, registry.get("rdmaflux.connect.step").tag("step", "accept").timer().count());
        assertEquals(1, registry.get("rdmaflux.connect.step").tag("step", "disconnect").timer().count());
        assertNull(registry.find("rdmaflux.connect.step").tag("step", "transfer").timer());
    }

    @Test
    void gaugesFollowDeltasAndAreSharedBetweenRecordersOfOneRegistry() {
        recorder.activeConnections(1);
        recorder.activeConnections(1);
        recorder.outstanding(34);
        recorder.outstanding(-1);
        MicrometerRdmaRecorder second = MicrometerRdmaRecorder.of(registry);
        second.activeConnections(1);
        second.outstanding(3);
        recorder.activeConnections(-1);
        assertEquals(2, gauge("rdmaflux.connections.active"));
        assertEquals(36, gauge("rdmaflux.work.requests.outstanding"));
        // ...and the counters too: Micrometer hands out the registered counter again.
        second.messageSent(10);
        recorder.messageSent(20);
        assertEquals(2, counter("rdmaflux.messages.sent"));
        assertEquals(30, counter("rdmaflux.messages.sent.bytes"));
    }

    @Test
    void messagesAndBytes() {
        for (int i = 0; i < 1000; i++) {
            recorder.messageSent(4096);
        }
        recorder.messageReceived(100);
        recorder.messageReceived(0);
        assertEquals(1000, counter("rdmaflux.messages.sent"));
        assertEquals(4_096_000, counter("rdmaflux.messages.sent.bytes"));
        assertEquals(2, counter("rdmaflux.messages.received"));
        assertEquals(100, counter("rdmaflux.messages.received.bytes"));
    }

    @Test
    void operationLatencyPerOpcode() {
        String[] ops = {"send", "write", "write_imm", "read", "cas", "faa"};
        for (int i = 0; i < ops.length; i++) {
            for (int j = 0; j <= i; j++) {
                recorder.operationLatency(ops[i], 1000L * (i + 1));
            }
        }
        recorder.operationLatency("bogus", 5);
        recorder.operationLatency(null, 5);
        for (int i = 0; i < ops.length; i++) {
            Timer t = registry.get("rdmaflux.operation.latency").tag("op", ops[i]).timer();
            assertEquals(i + 1, t.count(), ops[i]);
            assertEquals(1000.0 * (i + 1), t.max(TimeUnit.NANOSECONDS), ops[i]);
        }
        assertEquals(2, registry.get("rdmaflux.operation.latency").tag("op", "other").timer().count());
        // "send" with a fresh String: the switch compares contents, not identity.
        recorder.operationLatency(new String(new char[] {'s', 'e', 'n', 'd'}), 1);
        assertEquals(2, registry.get("rdmaflux.operation.latency").tag("op", "send").timer().count());
    }

    @Test
    void completionErrorsByStatus() {
        recorder.completionError(WcStatus.REM_ACCESS_ERR);
        recorder.completionError(WcStatus.REM_ACCESS_ERR);
        recorder.completionError(WcStatus.RNR_RETRY_EXC_ERR);
        recorder.completionError(WcStatus.SUCCESS); // not an error: ignored
        assertEquals(2, counter("rdmaflux.completion.errors", "status", "rem_access_err"));
        assertEquals(1, counter("rdmaflux.completion.errors", "status", "rnr_retry_exc_err"));
        assertEquals(0, counter("rdmaflux.completion.errors", "status", "retry_exc_err"));
        assertNull(registry.find("rdmaflux.completion.errors").tag("status", "success").counter());
    }

    @Test
    void creditsPollsAndCmEvents() {
        recorder.creditWait();
        recorder.creditWait();
        recorder.pollBatch(1);
        recorder.pollBatch(5);
        recorder.pollBatch(0); // an empty poll is not a batch
        recorder.pollBatch(32);
        recorder.cmEvent(CmEventType.ESTABLISHED);
        recorder.cmEvent(CmEventType.DISCONNECTED);
        recorder.cmEvent(CmEventType.DISCONNECTED);
        assertEquals(2, counter("rdmaflux.credit.waits"));
        assertEquals(3, counter("rdmaflux.cq.polls"));
        assertEquals(38, counter("rdmaflux.cq.completions"));
        assertEquals(1, counter("rdmaflux.cm.events", "type", "established"));
        assertEquals(2, counter("rdmaflux.cm.events", "type", "disconnected"));
        assertEquals(0, counter("rdmaflux.cm.events", "type", "connect_request"));
    }

    @Test
    void multicast() {
        recorder.multicastGroups(1);
        recorder.multicastGroups(1);
        recorder.multicastGroups(-1);
        recorder.datagramSent(100);
        recorder.datagramSent(200);
        recorder.datagramReceived(50);
        recorder.datagramDropped("overflow");
        recorder.datagramDropped("error");
        recorder.datagramDropped("something new");
        recorder.datagramDropped(null);
        assertEquals(1, gauge("rdmaflux.multicast.groups"));
        assertEquals(2, counter("rdmaflux.multicast.datagrams.sent"));
        assertEquals(300, counter("rdmaflux.multicast.datagrams.sent.bytes"));
        assertEquals(1, counter("rdmaflux.multicast.datagrams.received"));
        assertEquals(50, counter("rdmaflux.multicast.datagrams.received.bytes"));
        assertEquals(1, counter("rdmaflux.multicast.datagrams.dropped", "reason", "overflow"));
        assertEquals(1, counter("rdmaflux.multicast.datagrams.dropped", "reason", "error"));
        assertEquals(2, counter("rdmaflux.multicast.datagrams.dropped", "reason", "other"));
        assertEquals(3, registry.get("rdmaflux.multicast.datagrams.dropped").counters().size());
    }

    @Test
    void commonTags() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        MicrometerRdmaRecorder.builder(r).tags("application", "demo").build().messageSent(1);
        for (Meter m : r.getMeters()) {
            assertEquals("demo", m.getId().getTag("application"), m.getId().toString());
        }
        assertEquals(1, r.get("rdmaflux.messages.sent").tag("application", "demo").counter().count());
    }

    @Test
    void noRemoteTagByDefault() {
        assertSame(recorder, recorder.forPeer(new InetSocketAddress("192.0.2.1", 7471)));
        for (Meter m : registry.getMeters()) {
            assertNull(m.getId().getTag("remote"), m.getId().toString());
        }
    }

    @Test
    void remoteTagIsCapped() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        MicrometerRdmaRecorder root = MicrometerRdmaRecorder.builder(r).remoteAddressTag(2).build();
        MicrometerRdmaRecorder a = root.forPeer(new InetSocketAddress("192.0.2.1", 40000));
        MicrometerRdmaRecorder a2 = root.forPeer(new InetSocketAddress("192.0.2.1", 40001));
        MicrometerRdmaRecorder b = root.forPeer(new InetSocketAddress("192.0.2.2", 7471));
        MicrometerRdmaRecorder c = root.forPeer(new InetSocketAddress("192.0.2.3", 7471));
        MicrometerRdmaRecorder d = root.forPeer(new InetSocketAddress("192.0.2.4", 7471));
        assertSame(a, a2, "the port is not part of the tag");
        assertNotSame(a, b);
        assertSame(c, d, "beyond the cap every address shares remote=other");
        assertSame(root, root.forPeer(null));
        a.messageSent(1);
        a2.messageSent(1);
        b.messageSent(1);
        c.messageSent(1);
        d.messageSent(1);
        root.messageSent(1);
        assertEquals(2, r.get("rdmaflux.messages.sent").tag("remote", "192.0.2.1").counter().count());
        assertEquals(1, r.get("rdmaflux.messages.sent").tag("remote", "192.0.2.2").counter().count());
        assertEquals(2, r.get("rdmaflux.messages.sent").tag("remote", "other").counter().count());
        assertEquals(1, r.get("rdmaflux.messages.sent").tag("remote", "unknown").counter().count());
        assertEquals(4, r.get("rdmaflux.messages.sent").counters().size());
        a.activeConnections(1);
        b.activeConnections(1);
        assertEquals(1, r.get("rdmaflux.connections.active").tag("remote", "192.0.2.1").gauge().value());
        // Prometheus needs one set of tag keys per name: every per-connection meter carries remote.
        for (Meter m : r.getMeters()) {
            boolean perProcess = m.getId().getName().equals("rdmaflux.cm.events");
            assertEquals(!perProcess, m.getId().getTag("remote") != null, m.getId().toString());
        }
        // CM events are counted once, whichever recorder reports them.
        a.cmEvent(CmEventType.ESTABLISHED);
        root.cmEvent(CmEventType.ESTABLISHED);
        assertEquals(2, r.get("rdmaflux.cm.events").tag("type", "established").counter().count());
        assertThrows(IllegalArgumentException.class, () -> MicrometerRdmaRecorder.builder(r).remoteAddressTag(-1));
    }

    @Test
    void concurrentRecordingLosesNothing() throws Exception {
        int threads = 4;
        int perThread = 50_000;
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    recorder.outstanding(1);
                    recorder.messageSent(8);
                    recorder.operationLatency("send", 100);
                    recorder.outstanding(-1);
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        assertEquals(threads * perThread, counter("rdmaflux.messages.sent"));
        assertEquals(8.0 * threads * perThread, counter("rdmaflux.messages.sent.bytes"));
        assertEquals(threads * perThread, registry.get("rdmaflux.operation.latency").tag("op", "send").timer().count());
        assertEquals(0, gauge("rdmaflux.work.requests.outstanding"));
    }

    @Test
    void counterIdsAreStable() {
        Counter first = registry.get("rdmaflux.credit.waits").counter();
        recorder.creditWait();
        assertSame(first, registry.get("rdmaflux.credit.waits").counter());
    }
}
