package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** When a connection's own ring keeps released buffers for a later chain of reposts. */
class ReceiveRingTest {

    @Test
    void theBatchIsAnEighthOfTheWindowFromOneToEight() {
        assertEquals(1, RcQueue.repostBatch(1));
        assertEquals(1, RcQueue.repostBatch(15));
        assertEquals(2, RcQueue.repostBatch(16));
        assertEquals(4, RcQueue.repostBatch(32), "the default window");
        assertEquals(8, RcQueue.repostBatch(64));
        assertEquals(8, RcQueue.repostBatch(4096));
    }

    @Test
    void repostsWaitOnlyForLessThanABatchWhileThePeerHasCreditsForABatch() {
        assertTrue(ReceiveRing.holds(1, 4, false, 27));
        assertTrue(ReceiveRing.holds(3, 4, false, 4));
        assertFalse(ReceiveRing.holds(4, 4, false, 27), "a full batch goes");
        assertFalse(ReceiveRing.holds(3, 4, false, 3), "the peer could run out of credits before the next batch");
        assertFalse(ReceiveRing.holds(1, 4, true, 27), "a buffer that took no credit goes at once");
        assertFalse(ReceiveRing.holds(1, 1, false, 32), "a batch of one never waits");
    }
}
