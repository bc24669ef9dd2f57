package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.ffi.ibv_mr;
import rdmaflux.verbs.ffi.ibv_mw;
import rdmaflux.verbs.ffi.ibv_mw_bind_info;
import rdmaflux.verbs.ffi.ibv_send_wr;

/**
 * Type-2 binds on the {@link FakeProvider}: what a classic BIND_MW request holds in native memory, and what a
 * posted bind (classic or extended) records in the window and its region. The device's side is
 * {@link MemoryWindowIT}.
 */
class MemoryWindowBindTest {
    private static final AccessFlags READ_WRITE = AccessFlags.of(AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE);
    /** A key whose tag byte wraps on the next bind. */
    private static final int KEY = 0x123400ff;

    private final FakeProvider fake = new FakeProvider(1, 1);
    private final Arena arena = Arena.ofAuto();
    private final MemoryRegion region = fakeRegion(AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ,
            AccessFlag.REMOTE_WRITE, AccessFlag.MW_BIND));
    private final MemoryWindow window = fakeWindow(MemoryWindowType.TYPE_2);

    private MemoryRegion fakeRegion(AccessFlags access) {
        MemorySegment mr = ibv_mr.allocate(arena);
        ibv_mr.lkey(mr, 0x77);
        return new MemoryRegion(fake.qp.protectionDomain(), mr, arena.allocate(8192, 4096), access);
    }

    private MemoryWindow fakeWindow(MemoryWindowType type) {
        MemorySegment mw = ibv_mw.allocate(arena);
        ibv_mw.rkey(mw, KEY);
        ibv_mw.type(mw, type.value());
        ibv_mw.context(mw, fake.qp.protectionDomain().context().handle);
        return new MemoryWindow(fake.qp.protectionDomain(), mw, type);
    }

    @Test
    void theNextKeyChangesOnlyTheTagByte() {
        assertEquals(0x12340000, MemoryWindow.nextRkey(KEY));
        assertEquals(0xabcdef01, MemoryWindow.nextRkey(0xabcdef00));
    }

    @Test
    void aClassicBindRequestHoldsTheWindowTheRangeAndTheNextKey() {
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 9, SendOpcode.BIND_MW, 0);
        RemoteBuffer remote = s.bindWindow(0, window, region, 512, 1024, READ_WRITE);
        assertEquals(new RemoteBuffer(region.address() + 512, 1024, 0x12340000), remote);

        MemorySegment wr = s.chain(1, 1);
        assertEquals(SendOpcode.BIND_MW.value(), ibv_send_wr.opcode(wr));
        assertEquals(0, ibv_send_wr.num_sge(wr), "a bind carries no data");
        MemorySegment bind = wr.asSlice(ibv_send_wr.bind_mw$offset(), ibv_send_wr.bind_mw.layout().byteSize());
        assertEquals(window.handle.address(), ibv_send_wr.bind_mw.mw(bind).address());
        assertEquals(0x12340000, ibv_send_wr.bind_mw.rkey(bind));
        MemorySegment info = ibv_send_wr.bind_mw.bind_info(bind);
        assertEquals(region.handle.address(), ibv_mw_bind_info.mr(info).address());
        assertEquals(region.address() + 512, ibv_mw_bind_info.addr(info));
        assertEquals(1024, ibv_mw_bind_info.length(info));
        assertEquals(AccessFlag.REMOTE_READ.value() | AccessFlag.REMOTE_WRITE.value(), ibv_mw_bind_info.mw_access_flags(info),
                "a window grants no local access");
    }

    @Test
    void aPostedBindRecordsTheKeyAndHoldsTheRegion() {
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 9, SendOpcode.BIND_MW, 0).bindWindow(0, window, region, 0, 64, READ_WRITE);
        assertEquals(KEY, window.rkey(), "nothing changes before the post");
        fake.qp.postSend(s, 1);
        assertEquals(0x12340000, window.rkey());
        assertSame(region, window.boundRegion());
        assertEquals(1, region.boundWindowCount());
        assertThrows(IllegalStateException.class, region::close);
        assertFalse(region.isClosed());
        assertEquals(0, region.leaseCount());
        assertEquals(0, window.leaseCount());

        // A request set again is no bind any more: posting it records nothing.
        s.set(0, 10, SendOpcode.SEND, 0);
        fake.qp.postSend(s, 1);
        assertEquals(0x12340000, window.rkey());
    }

    @Test
    void anExtendedBindIsRecordedOnCompleteAndForgottenOnAbort() {
        ExtendedSendQueue sq = fake.extended;
        sq.start();
        sq.bindWindow(window, region, 0, 64, READ_WRITE);
        assertThrows(IllegalStateException.class, () -> sq.bindWindow(window, region, 64, 64, READ_WRITE),
                "one bind per window and batch: both would take the same key");
        sq.abort();
        assertEquals(KEY, window.rkey());
        assertNull(window.boundRegion());

        sq.start();
        RemoteBuffer remote = sq.bindWindow(window, region, 64, 64, READ_WRITE);
        sq.complete();
        assertEquals(remote.rkey(), window.rkey());
        assertSame(region, window.boundRegion());
        assertEquals(1, region.boundWindowCount());
    }

    @Test
    void rebindingToAnotherRegionMovesTheHold() {
        MemoryRegion other = fakeRegion(region.access());
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 1, SendOpcode.BIND_MW, 0).bindWindow(0, window, region, 0, 64, READ_WRITE);
        fake.qp.postSend(s, 1);
        s.set(0, 2, SendOpcode.BIND_MW, 0).bindWindow(0, window, other, 0, 64, READ_WRITE);
        fake.qp.postSend(s, 1);
        assertEquals(0, region.boundWindowCount());
        assertEquals(1, other.boundWindowCount());
    }

    @Test
    void badBindsFailBeforeAnythingIsPosted() {
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 1, SendOpcode.RDMA_WRITE, 0);
        assertThrows(IllegalStateException.class, () -> s.bindWindow(0, window, region, 0, 64, READ_WRITE),
                "not a BIND_MW request");
        s.set(0, 1, SendOpcode.BIND_MW, 0);
        assertThrows(IllegalStateException.class,
                () -> s.bindWindow(0, fakeWindow(MemoryWindowType.TYPE_1), region, 0, 64, READ_WRITE));
        assertThrows(IllegalArgumentException.class,
                () -> s.bindWindow(0, window, fakeRegion(AccessFlags.REMOTE_ALL), 0, 64, READ_WRITE), "no MW_BIND");
        assertThrows(IllegalArgumentException.class, () -> s.bindWindow(0, window,
                fakeRegion(AccessFlags.of(AccessFlag.REMOTE_READ, AccessFlag.MW_BIND)), 0, 64, READ_WRITE),
                "remote write through a window needs a locally writable region");
        assertThrows(IllegalArgumentException.class,
                () -> s.bindWindow(0, window, region, 0, 64, AccessFlags.of(AccessFlag.LOCAL_WRITE)));
        assertThrows(IndexOutOfBoundsException.class, () -> s.bindWindow(0, window, region, 8190, 64, READ_WRITE));
        assertThrows(IndexOutOfBoundsException.class, () -> s.bindWindow(0, window, region, -1, 64, READ_WRITE));
        assertEquals(0, region.boundWindowCount());
    }

    @Test
    void aBindWithDataIsRefusedWhenPosted() {
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 1, SendOpcode.BIND_MW, 0).bindWindow(0, window, region, 0, 64, READ_WRITE);
        s.sge(0, 0, region, 0, 8);
        assertThrows(IllegalArgumentException.class, () -> fake.qp.postSend(s, 1));
        assertEquals(0, region.leaseCount());
        assertNull(window.boundRegion());
    }

    @Test
    void invalidateWritesTheKeyUnconverted() {
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 1, SendOpcode.LOCAL_INV, 0).invalidate(0, KEY);
        assertEquals(KEY, ibv_send_wr.invalidate_rkey(s.chain(1, 1)));
        assertEquals(KEY, s.wrs.get(ValueLayout.JAVA_INT, ibv_send_wr.imm_data$offset()));
    }
}
