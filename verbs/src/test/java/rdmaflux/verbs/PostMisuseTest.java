package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.ffi.ibv_mr;

/**
 * Posting freed memory fails in Java, before the provider function runs, and leaves no lease behind.
 * Closed regions, address handles and queues need a real device to close (destroying the fake objects
 * would hand fake memory to libibverbs): {@code MisuseIT} covers those in a child JVM.
 */
class PostMisuseTest {

    /** A region over memory of its own arena, which the test frees while the region stays "registered". */
    private static MemoryRegion regionOver(FakeProvider fake, MemorySegment memory) {
        MemorySegment mrMem = ibv_mr.allocate(Arena.ofAuto());
        ibv_mr.lkey(mrMem, 0x4321);
        return new MemoryRegion(fake.mr.protectionDomain(), mrMem, memory, AccessFlags.LOCAL_WRITE);
    }

    @Test
    void aRegionWhoseArenaWasClosedIsRefusedWhenSetAndWhenPosted() {
        FakeProvider fake = new FakeProvider(2, 1);
        Arena arena = Arena.ofShared();
        MemoryRegion mr = regionOver(fake, arena.allocate(256));
        SendRequests s = new SendRequests(1, 2);
        // Entry 0 on a healthy region: its lease must be given back when entry 1 fails.
        s.set(0, 1, SendOpcode.SEND, 0).sge(0, 0, fake.mr, 0, 8).sge(0, 1, mr, 0, 64);
        arena.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> fake.qp.postSend(s, 1));
        assertTrue(e.getMessage().contains("was freed"), e.getMessage());
        assertEquals(0, fake.mr.leaseCount(), "the healthy region's lease was given back");
        assertEquals(0, fake.qp.leaseCount());
        assertThrows(IllegalStateException.class, () -> s.sge(0, 1, mr, 0, 64));

        ReceiveRequests r = new ReceiveRequests(1, 1);
        Arena arena2 = Arena.ofShared();
        MemoryRegion mr2 = regionOver(fake, arena2.allocate(256));
        r.set(0, 2).sge(0, 0, mr2, 0, 256);
        arena2.close();
        assertThrows(IllegalStateException.class, () -> fake.qp.postReceive(r, 1));
    }

    @Test
    void aSegmentEntryIsCheckedWhenPostedButARawAddressCannotBe() {
        FakeProvider fake = new FakeProvider(1, 1);
        Arena arena = Arena.ofShared();
        MemorySegment payload = arena.allocate(32);
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 1, SendOpcode.SEND, SendFlag.mask(SendFlag.INLINE)).sge(0, 0, payload, 0);
        fake.qp.postSend(s, 1);
        arena.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> fake.qp.postSend(s, 1));
        assertTrue(e.getMessage().contains("was freed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> s.sge(0, 0, payload, 0));
        // Overwriting the entry forgets the segment: the batch posts again.
        s.sge(0, 0, fake.mr, 0, 8);
        fake.qp.postSend(s, 1);
        assertEquals(0, fake.mr.leaseCount());
    }

    @Test
    void leasesAreGivenBackAfterEveryPostAndAfterARefusedOne() {
        FakeProvider fake = new FakeProvider(1, 1);
        SendRequests s = new SendRequests(2, 2);
        s.set(0, 1, SendOpcode.SEND, 0).sge(0, 0, fake.mr, 0, 8).sge(0, 1, fake.mr, 8, 8);
        assertThrows(IllegalArgumentException.class, () -> fake.qp.postSend(s, 1), "2 entries, the QP takes 1");
        assertEquals(0, fake.mr.leaseCount());
        s.set(0, 1, SendOpcode.SEND, 0).sge(0, 0, fake.mr, 0, 8);
        s.set(1, 2, SendOpcode.SEND, 0).sge(1, 0, fake.mr, 8, 8);
        fake.qp.postSend(s, 2);
        assertEquals(0, fake.mr.leaseCount());
        assertEquals(0, fake.qp.leaseCount());
    }
}
