package rdmaflux.cm.internal.datagram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

/** A UD queue's receive ring: slot arithmetic, work request ids, and which receives are posted when. */
class UdReceiveRingTest {

    /** Records what the ring posts; refuses a post (after {@code refuseAfter} receives of it) when asked. */
    private static final class Record implements UdReceiveRing.Poster {
        final List<int[]> posts = new ArrayList<>();
        int refuseAfter = -1;
        int last;

        @Override
        public void post(int[] slots, int n) {
            if (refuseAfter >= 0) {
                last = Math.min(refuseAfter, n);
                if (last > 0) {
                    posts.add(Arrays.copyOf(slots, last));
                }
                throw new IllegalStateException("refused");
            }
            last = n;
            posts.add(Arrays.copyOf(slots, n));
        }

        @Override
        public int lastPosted() {
            return last;
        }
    }

    @Test
    void aSlotHoldsTheGrhAndTheLargestPayloadRoundedToACacheLine() {
        assertEquals(1088, UdReceiveRing.slotSize(1024), "1024 + 40 rounded up");
        assertEquals(4160, UdReceiveRing.slotSize(4096));
        assertEquals(64, UdReceiveRing.slotSize(24), "24 + 40 is exactly a line");
        assertEquals(128, UdReceiveRing.slotSize(25));
        UdReceiveRing ring = new UdReceiveRing(4, UdReceiveRing.slotSize(1024), null, new Record());
        assertEquals(0, ring.offset(0));
        assertEquals(3 * 1088L, ring.offset(3));
    }

    @Test
    void aReceiveIsToldFromASendByItsWorkRequestId() {
        for (int slot : new int[] {0, 1, 4095, Integer.MAX_VALUE}) {
            long id = UdReceiveRing.wrId(slot);
            assertTrue(UdReceiveRing.isReceive(id));
            assertEquals(slot, UdReceiveRing.slotOf(id));
        }
        assertFalse(UdReceiveRing.isReceive(0), "a send's id is its buffer's index");
        assertFalse(UdReceiveRing.isReceive(Integer.MAX_VALUE));
    }

    @Test
    void postableIsTheFreeSlotsBoundedByTheFreeCredits() {
        assertEquals(8, UdReceiveRing.postable(8, 8, 0, 0));
        assertEquals(3, UdReceiveRing.postable(3, 8, 5, 0));
        assertEquals(1, UdReceiveRing.postable(3, 8, 5, 2), "undelivered datagrams hold their credits");
        assertEquals(0, UdReceiveRing.postable(3, 8, 5, 3));
        assertEquals(0, UdReceiveRing.postable(3, 8, 4, 5), "never negative");
    }

    @Test
    void theFirstPostFillsEverySlotInOrder() {
        Record r = new Record();
        UdReceiveRing ring = new UdReceiveRing(4, 64, null, r);
        assertNull(ring.replenish());
        assertEquals(1, r.posts.size());
        assertEquals(List.of(0, 1, 2, 3), slots(r.posts.get(0)));
        assertEquals(4, ring.posted());
        assertNull(ring.replenish());
        assertEquals(1, r.posts.size(), "nothing is free: no post");
    }

    @Test
    void aCompletedSlotIsPostedAgainOnlyOnceItsDatagramWasSeen() {
        Record r = new Record();
        UdReceiveRing ring = new UdReceiveRing(4, 64, null, r);
        ring.replenish();
        assertEquals(2, ring.completed(UdReceiveRing.wrId(2)));
        ring.delivered();
        assertEquals(3, ring.posted());
        ring.replenish();
        assertEquals(1, r.posts.size(), "the datagram still holds its credit");
        ring.returned();
        ring.replenish();
        assertEquals(List.of(2), slots(r.posts.get(1)));
        assertEquals(4, ring.posted());
    }

    @Test
    void aFailedReceiveFreesItsSlotAndCreditAtOnce() {
        Record r = new Record();
        UdReceiveRing ring = new UdReceiveRing(2, 64, null, r);
        ring.replenish();
        ring.completed(UdReceiveRing.wrId(0)); // not delivered: e.g. a flushed or failed receive
        ring.replenish();
        assertEquals(List.of(0), slots(r.posts.get(1)));
    }

    @Test
    void aRefusedPostKeepsItsSlotsFreeForTheNextOne() {
        Record r = new Record();
        UdReceiveRing ring = new UdReceiveRing(4, 64, null, r);
        r.refuseAfter = 0;
        RuntimeException refused = ring.replenish();
        assertTrue(refused instanceof IllegalStateException);
        assertEquals(0, ring.posted());
        r.refuseAfter = -1;
        assertNull(ring.replenish());
        assertEquals(List.of(0, 1, 2, 3), slots(r.posts.get(0)), "the same slots, in the same order");
    }

    @Test
    void aPostRefusedPartWayCountsWhatWentBeforeTheRefusal() {
        Record r = new Record();
        UdReceiveRing ring = new UdReceiveRing(4, 64, null, r);
        r.refuseAfter = 3;
        RuntimeException refused = ring.replenish();
        assertSame(IllegalStateException.class, refused.getClass());
        assertEquals(3, ring.posted());
        r.refuseAfter = -1;
        ring.replenish();
        assertEquals(List.of(3), slots(r.posts.get(1)), "only the refused slot is posted again");
        assertEquals(4, ring.posted());
    }

    @Test
    void aRingOfNoSlotsNeverPosts() {
        UdReceiveRing ring = new UdReceiveRing(0, 64, null, null);
        assertNull(ring.replenish());
        assertEquals(0, ring.posted());
        assertEquals(0, ring.size());
    }

    private static List<Integer> slots(int[] a) {
        return Arrays.stream(a).boxed().toList();
    }
}
