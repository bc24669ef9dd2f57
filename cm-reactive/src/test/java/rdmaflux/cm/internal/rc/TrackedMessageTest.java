package rdmaflux.cm.internal.rc;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import rdmaflux.cm.RdmaLeak;
import rdmaflux.cm.RdmaLeakDetection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.internal.leak.LeakTracker;

/**
 * The leak detector on synthetic messages: what it tracks at each level, that a dropped message is reported
 * with its sites and released, and that a released one is not. {@code MessageReleaseIT} puts a leak back on a
 * real connection.
 */
class TrackedMessageTest {
    private static final String CONNECTION = "10.0.0.1:1 -> 10.0.0.2:2";
    private final List<RdmaLeak> leaks = new CopyOnWriteArrayList<>();
    private RdmaLeakDetection.Level before;
    private Disposable listening;

    @BeforeEach
    void listen() {
        before = RdmaLeakDetection.level();
        RdmaLeakDetection.level(RdmaLeakDetection.Level.PARANOID);
        listening = RdmaLeakDetection.onLeak(l -> {
            if (l.connection().equals(CONNECTION)) {
                leaks.add(l);
            }
        });
    }

    @AfterEach
    void restore() {
        listening.dispose();
        RdmaLeakDetection.level(before);
    }

    @Test
    void aDroppedMessageIsReportedWithItsSitesAndReleased() {
        ReceivedMessagesTest.Message delivery = new ReceivedMessagesTest.Message("dropped");
        long reportedBefore = LeakTracker.reported();
        dropAfterTouching(delivery, 9);
        assertEquals(1, LeakTracker.collect(), "the dropped message was not found");
        assertEquals(1, delivery.releases, "the detector gives the buffer back");
        assertEquals(reportedBefore + 1, LeakTracker.reported());
        assertEquals(1, leaks.size());
        RdmaLeak leak = leaks.getFirst();
        assertEquals(7, leak.length());
        assertEquals(RdmaLeak.MAX_TOUCHES, leak.touches().size(), "the first touch and the latest ones");
        assertTrue(leak.touches().getFirst().contains("firstTouch"), leak.touches().getFirst());
        assertTrue(leak.touches().getLast().contains("lastTouch"), leak.touches().getLast());
        assertTrue(leak.touches().getFirst().startsWith("thread " + Thread.currentThread().getName()));
        assertEquals("delivered to receive() on thread " + Thread.currentThread().getName(), leak.received());
        String report = leak.toString();
        assertTrue(report.startsWith("LEAK: an RdmaMessage of 7 bytes from connection " + CONNECTION), report);
        assertTrue(report.contains("receive().autoRelease()"), "says what to do: " + report);
        assertEquals(0, LeakTracker.collect(), "a leak is reported once");
    }

    @Test
    void aMessageNeverTouchedIsReportedSo() {
        ReceivedMessagesTest.Message delivery = new ReceivedMessagesTest.Message("x");
        dropAfterTouching(delivery, 0);
        assertEquals(1, LeakTracker.collect());
        assertEquals(List.of(), leaks.getFirst().touches());
        assertTrue(leaks.getFirst().toString().contains("Never touched"), leaks.getFirst().toString());
    }

    @Test
    void aReleasedMessageIsNoLeak() {
        ReceivedMessagesTest.Message delivery = new ReceivedMessagesTest.Message("released");
        int trackedBefore = LeakTracker.tracked();
        releaseAfterUse(delivery);
        assertEquals(trackedBefore, LeakTracker.tracked(), "a released message is tracked no more");
        assertEquals(0, LeakTracker.collect());
        assertEquals(List.of(), leaks);
        assertEquals(1, delivery.releases);
    }

    @Test
    void retainReachesTheDeliveryAndIsATouch() {
        ReceivedMessagesTest.Message delivery = new ReceivedMessagesTest.Message("kept");
        RdmaMessage m = TrackedMessage.maybeTrack(delivery, CONNECTION);
        Retainable r = assertInstanceOf(Retainable.class, m);
        assertSame(m, m.retain());
        assertTrue(r.retained());
        assertTrue(delivery.retained);
        m.release();
    }

    @Test
    void offTracksNothingAndSampledAboutOneInTheInterval() {
        ReceivedMessagesTest.Message delivery = new ReceivedMessagesTest.Message("m");
        RdmaLeakDetection.level(RdmaLeakDetection.Level.OFF);
        assertSame(delivery, TrackedMessage.maybeTrack(delivery, CONNECTION));
        RdmaLeakDetection.level(RdmaLeakDetection.Level.SAMPLED);
        int interval = RdmaLeakDetection.samplingInterval();
        int deliveries = 100 * interval;
        int tracked = 0;
        for (int i = 0; i < deliveries; i++) {
            RdmaMessage m = TrackedMessage.maybeTrack(delivery, CONNECTION);
            if (m != delivery) {
                tracked++;
                m.release();
            }
        }
        // 100 expected; the bounds are 6 standard deviations away.
        assertTrue(tracked >= 40 && tracked <= 160, tracked + " of " + deliveries + " tracked");
    }

    @Test
    void theDetectorsThreadEndsOnceNothingIsTracked() {
        ReceivedMessagesTest.Message delivery = new ReceivedMessagesTest.Message("t");
        RdmaMessage m = TrackedMessage.maybeTrack(delivery, CONNECTION);
        assertTrue(detectorRuns(), "a tracked message starts the detector's thread");
        m.release();
        await().atMost(Duration.ofSeconds(30)).until(() -> !detectorRuns());
    }

    private static boolean detectorRuns() {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.isAlive() && t.getName().equals("rdmaflux-leak-detector"));
    }

    private static void dropAfterTouching(ReceivedMessagesTest.Message delivery, int touches) {
        RdmaMessage m = TrackedMessage.maybeTrack(delivery, CONNECTION);
        assertInstanceOf(TrackedMessage.class, m);
        if (touches > 0) {
            firstTouch(m);
        }
        for (int i = 1; i < touches - 1; i++) {
            m.asByteBuffer();
        }
        m.length(); // reading the length is no access to the bytes: not recorded
        if (touches > 1) {
            lastTouch(m);
        }
    }

    private static void firstTouch(RdmaMessage m) {
        m.data();
    }

    private static void lastTouch(RdmaMessage m) {
        m.toByteArray();
    }

    private static void releaseAfterUse(ReceivedMessagesTest.Message delivery) {
        RdmaMessage m = TrackedMessage.maybeTrack(delivery, CONNECTION);
        m.data();
        m.release();
    }
}
