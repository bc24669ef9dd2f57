package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The record of outstanding work requests: which completion gives back which leases. The leases are taken on
 * a fake region, whose work lease count shows what is still held.
 */
class WorkRingTest {
    private final FakeProvider fake = new FakeProvider(2, 1);
    private final MemoryRegion mr = fake.mr;

    /** Records one request with id {@code wrId} that holds {@code leases} leases on the region. */
    private void post(WorkRing ring, long wrId, int leases) {
        ring.begin(wrId);
        for (int k = 0; k < leases; k++) {
            mr.acquireWork();
            ring.add(mr);
        }
        ring.publish();
    }

    @Test
    void aCompletionRetiresEverythingUpToTheFirstRequestWithItsId() {
        WorkRing ring = new WorkRing(8, 2, new QueueLock());
        // Unsignaled 1 and 2, signaled 3: the completion of 3 ends all three.
        post(ring, 1, 1);
        post(ring, 2, 2);
        post(ring, 3, 1);
        post(ring, 4, 1);
        assertEquals(5, mr.workLeaseCount());
        assertTrue(ring.retireThrough(3));
        assertEquals(1, mr.workLeaseCount(), "only request 4 is left");
        assertEquals(1, ring.outstanding());
        assertTrue(ring.retireThrough(4));
        assertEquals(0, mr.workLeaseCount());
        assertEquals(0, ring.outstanding());
    }

    @Test
    void anIdNoOutstandingRequestHasRetiresNothing() {
        WorkRing ring = new WorkRing(4, 1, new QueueLock());
        post(ring, 1, 1);
        post(ring, 2, 1);
        assertFalse(ring.retireThrough(7));
        assertEquals(2, mr.workLeaseCount());
        assertFalse(ring.contains(7));
        assertTrue(ring.contains(2));
    }

    @Test
    void reusedIdsRetireOnlyUpToTheOldestOutstandingOne() {
        WorkRing ring = new WorkRing(8, 1, new QueueLock());
        // A caller that gives every request id 0 (common for receives): each completion ends one request,
        // the oldest, never one posted after the request that completed.
        for (int i = 0; i < 5; i++) {
            post(ring, 0, 1);
        }
        assertTrue(ring.retireThrough(0));
        assertEquals(4, mr.workLeaseCount());
        // Ids 5, 9, 5: the completion of the second 5 first matches the first 5 and ends only that far; the
        // next completion (of the second 5, or of anything after it) ends the rest.
        WorkRing sends = new WorkRing(8, 1, new QueueLock());
        post(sends, 5, 1);
        post(sends, 9, 1);
        post(sends, 5, 1);
        assertTrue(sends.retireThrough(5));
        assertEquals(4 + 2, mr.workLeaseCount());
        assertTrue(sends.retireThrough(5));
        assertEquals(4, mr.workLeaseCount());
    }

    @Test
    void aFullRingGrowsAndKeepsTheOrder() {
        WorkRing ring = new WorkRing(3, 1, new QueueLock());
        assertEquals(4, ring.size(), "the depth rounded up to a power of two");
        for (int i = 0; i < 4; i++) {
            post(ring, i, 1);
        }
        assertTrue(ring.retireThrough(1));
        // Wrap around, then fill past the size: the ring doubles, entries keep their order.
        for (int i = 4; i < 9; i++) {
            post(ring, i, 1);
        }
        assertEquals(7, ring.outstanding());
        assertEquals(8, ring.size());
        assertTrue(ring.retireThrough(5));
        assertEquals(3, mr.workLeaseCount(), "6, 7 and 8 are left");
        assertTrue(ring.retireThrough(8));
        assertEquals(0, mr.workLeaseCount());
    }

    @Test
    void aRefusedPostIsTakenBackWithItsLeases() {
        WorkRing ring = new WorkRing(8, 2, new QueueLock());
        post(ring, 1, 1);
        long mark = ring.mark();
        post(ring, 2, 2);
        post(ring, 3, 1);
        // The provider took request 2 and refused 3.
        ring.rollback(mark + 1);
        assertEquals(3, mr.workLeaseCount());
        assertFalse(ring.contains(3));
        ring.rollback(ring.mark()); // nothing to take back
        assertTrue(ring.retireThrough(2));
        assertEquals(0, mr.workLeaseCount());
    }

    @Test
    void anSrqCompletionRetiresOnlyItsOwnRequest() {
        WorkRing ring = new WorkRing(4, 1, new QueueLock());
        post(ring, 10, 1);
        post(ring, 11, 1);
        post(ring, 12, 1);
        // Taken by different QPs, polled from different CQs: 12 and 10 complete before 11.
        assertTrue(ring.retireOne(12));
        assertEquals(2, mr.workLeaseCount());
        assertTrue(ring.retireOne(10));
        assertEquals(2, ring.outstanding(), "11, and the hole 12 left behind it");
        assertFalse(ring.retireOne(12), "retired already");
        assertTrue(ring.retireOne(11));
        assertEquals(0, mr.workLeaseCount());
        assertEquals(0, ring.outstanding(), "the head skipped the hole");
    }

    @Test
    void destroyingTheQueueRetiresAll() {
        WorkRing ring = new WorkRing(4, 2, new QueueLock());
        post(ring, 1, 2);
        post(ring, 2, 1);
        ring.retireAll();
        assertEquals(0, mr.workLeaseCount());
        assertEquals(0, ring.outstanding());
    }

    @Test
    void settingASlotAgainReplacesItsLease() {
        WorkRing ring = new WorkRing(4, 2, new QueueLock());
        ring.begin(1);
        mr.acquireWork();
        ring.put(1, mr);
        mr.acquireWork();
        ring.put(1, mr);
        assertEquals(1, mr.workLeaseCount(), "the first lease was given back");
        mr.acquireWork();
        ring.put(0, mr);
        ring.publish();
        assertEquals(2, mr.workLeaseCount());
        assertTrue(ring.retireThrough(1));
        assertEquals(0, mr.workLeaseCount());
    }
}
