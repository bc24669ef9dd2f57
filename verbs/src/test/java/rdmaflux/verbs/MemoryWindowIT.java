package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Memory windows on a real RC pair: side b grants side a a window on part of a region, a reads and writes
 * through the window's key. Every access that must fail is the last operation of its pair, because a remote
 * access error moves both QPs to the error state.
 */
class MemoryWindowIT {
    private static final Duration T = Duration.ofSeconds(30);
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final Set<SendOp> OPS = EnumSet.of(SendOp.SEND, SendOp.SEND_WITH_INV, SendOp.RDMA_READ,
            SendOp.RDMA_WRITE, SendOp.LOCAL_INV, SendOp.BIND_MW);
    private static final AccessFlags REGION = AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ,
            AccessFlag.REMOTE_WRITE, AccessFlag.MW_BIND);
    private static final AccessFlags READ_WRITE = AccessFlags.of(AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE);
    /** The window covers [WINDOW_AT, WINDOW_AT + WINDOW_LENGTH) of b's buffer. */
    private static final long WINDOW_AT = 4096;
    private static final long WINDOW_LENGTH = 4096;

    /** The two ways to post a bind or an invalidation. */
    enum PostPath {
        CLASSIC, EXTENDED
    }

    /** b's region registered for windows, a window on it, and a's buffer for data. */
    private record Grant(RcPair pair, MemoryRegion region, MemoryWindow window) {
    }

    private static Grant grant(MemoryWindowType type) {
        RcPair p = RcPair.openExtended(OPS);
        try {
            MemoryRegion region = p.pd.register(p.b.buffer, REGION);
            return new Grant(p, region, p.pd.allocateMemoryWindow(type));
        } catch (RuntimeException | Error e) {
            p.close();
            throw e;
        }
    }

    private static RemoteBuffer bind(Grant g, PostPath path, long offset, long length, AccessFlags access) {
        RcPair p = g.pair();
        RemoteBuffer remote;
        if (path == PostPath.CLASSIC) {
            SendRequests bind = new SendRequests(1, 1);
            bind.set(0, 100, SendOpcode.BIND_MW, SIGNALED);
            remote = bind.bindWindow(0, g.window(), g.region(), offset, length, access);
            p.b.qp.postSend(bind, 1);
        } else {
            ExtendedSendQueue sq = p.b.qp.extendedSendQueue();
            sq.start();
            sq.wrId(100).flags(SIGNALED);
            remote = sq.bindWindow(g.window(), g.region(), offset, length, access);
            sq.complete();
        }
        WorkCompletions wc = Completions.awaitSuccess(p.b.cq, T);
        assertEquals(100, wc.wrId(0));
        assertEquals(WcOpcode.BIND_MW, wc.opcode(0));
        assertEquals(remote.rkey(), g.window().rkey());
        return remote;
    }

    private static void localInvalidate(Grant g, PostPath path, int rkey) {
        RcPair p = g.pair();
        if (path == PostPath.CLASSIC) {
            SendRequests inv = new SendRequests(1, 1);
            inv.set(0, 200, SendOpcode.LOCAL_INV, SIGNALED).invalidate(0, rkey);
            p.b.qp.postSend(inv, 1);
        } else {
            ExtendedSendQueue sq = p.b.qp.extendedSendQueue();
            sq.start();
            sq.wrId(200).flags(SIGNALED).localInvalidate(rkey);
            sq.complete();
        }
        WorkCompletions wc = Completions.awaitSuccess(p.b.cq, T);
        assertEquals(200, wc.wrId(0));
        assertEquals(WcOpcode.LOCAL_INV, wc.opcode(0));
    }

    /** a RDMA-writes {@code length} bytes of its buffer to b at {@code address}; returns the completion status. */
    private static WcStatus write(RcPair p, long address, int rkey, int length) {
        SendRequests w = new SendRequests(1, 1);
        w.set(0, 1, SendOpcode.RDMA_WRITE, SIGNALED).sge(0, 0, p.a.mr, 0, length).rdma(0, address, rkey);
        p.a.qp.postSend(w, 1);
        return awaitStatus(p.a.cq);
    }

    /** a RDMA-reads {@code length} bytes from b at {@code address} into its buffer at 8192. */
    private static WcStatus read(RcPair p, long address, int rkey, int length) {
        SendRequests r = new SendRequests(1, 1);
        r.set(0, 2, SendOpcode.RDMA_READ, SIGNALED).sge(0, 0, p.a.mr, 8192, length).rdma(0, address, rkey);
        p.a.qp.postSend(r, 1);
        return awaitStatus(p.a.cq);
    }

    private static WcStatus awaitStatus(CompletionQueue cq) {
        WorkCompletions wc = new WorkCompletions(1);
        Completions.awaitOne(cq, wc, T);
        return wc.status(0);
    }

    @ParameterizedTest
    @EnumSource(PostPath.class)
    void aType2WindowGrantsItsRangeAndTheRegionsEndStopsIt(PostPath path) {
        Grant g = grant(MemoryWindowType.TYPE_2);
        try (RcPair p = g.pair()) {
            RemoteBuffer remote = bind(g, path, WINDOW_AT, WINDOW_LENGTH, READ_WRITE);
            assertEquals(p.b.buffer.address() + WINDOW_AT, remote.address());
            assertEquals(WINDOW_LENGTH, remote.length());
            assertNotEquals(g.region().rkey(), remote.rkey());
            for (int i = 0; i < 64; i++) {
                p.a.buffer.set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
            }
            assertEquals(WcStatus.SUCCESS, write(p, remote.address() + 100, remote.rkey(), 64));
            for (int i = 0; i < 64; i++) {
                assertEquals((byte) (i + 1), p.b.buffer.get(ValueLayout.JAVA_BYTE, WINDOW_AT + 100 + i), "byte " + i);
            }
            assertEquals(WcStatus.SUCCESS, read(p, remote.address() + 100, remote.rkey(), 64));
            assertEquals((byte) 64, p.a.buffer.get(ValueLayout.JAVA_BYTE, 8192 + 63));
            long regionEnd = g.region().address() + g.region().length();
            if (RdmaTestEnv.inSandbox()) {
                // Linux 6.1's rxe checks an access through a window against the window's region, not the
                // window's range: the last 32 bytes of the window and 32 beyond it, and 64 bytes wholly
                // outside it, are read. Only the region's end stops it.
                assertEquals(WcStatus.SUCCESS, read(p, remote.address() + WINDOW_LENGTH - 32, remote.rkey(), 64));
                assertEquals(WcStatus.SUCCESS, read(p, remote.address() + WINDOW_LENGTH + 1024, remote.rkey(), 64));
                assertEquals(WcStatus.REM_ACCESS_ERR, read(p, regionEnd - 32, remote.rkey(), 64));
            } else {
                assertEquals(WcStatus.REM_ACCESS_ERR,
                        read(p, remote.address() + WINDOW_LENGTH - 32, remote.rkey(), 64));
            }
            assertFalse(g.region().isClosed());
        }
    }

    @Test
    void softRoceReportsBothWindowTypes() {
        try (RcPair p = RcPair.open()) {
            Set<DeviceCapability> caps = p.context.queryDevice().capabilities();
            if (RdmaTestEnv.inSandbox()) {
                assertTrue(caps.contains(DeviceCapability.MEM_WINDOW), caps::toString);
                assertTrue(caps.contains(DeviceCapability.MEM_WINDOW_TYPE_2B), caps::toString);
                assertTrue(p.context.queryDevice().maxMw() > 0);
            }
            if (caps.contains(DeviceCapability.MEM_WINDOW)) {
                p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_1).close();
                p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_2).close();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(PostPath.class)
    void aReadOnlyWindowRefusesWrites(PostPath path) {
        Grant g = grant(MemoryWindowType.TYPE_2);
        try (RcPair p = g.pair()) {
            RemoteBuffer remote = bind(g, path, WINDOW_AT, WINDOW_LENGTH, AccessFlags.of(AccessFlag.REMOTE_READ));
            assertEquals(WcStatus.SUCCESS, read(p, remote.address(), remote.rkey(), 64));
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, remote.address(), remote.rkey(), 64));
            assertEquals(0L, p.b.buffer.get(ValueLayout.JAVA_LONG, WINDOW_AT));
        }
    }

    @ParameterizedTest
    @EnumSource(PostPath.class)
    void localInvalidateRevokesTheWindowNotTheRegion(PostPath path) {
        Grant g = grant(MemoryWindowType.TYPE_2);
        try (RcPair p = g.pair()) {
            RemoteBuffer remote = bind(g, path, WINDOW_AT, WINDOW_LENGTH, READ_WRITE);
            assertEquals(WcStatus.SUCCESS, read(p, remote.address(), remote.rkey(), 64));
            localInvalidate(g, path, remote.rkey());
            // The region's own key still works: invalidating the window deregistered nothing.
            assertEquals(WcStatus.SUCCESS, read(p, g.region().address(), g.region().rkey(), 64));
            assertEquals(WcStatus.REM_ACCESS_ERR, read(p, remote.address(), remote.rkey(), 64));
        }
    }

    @ParameterizedTest
    @EnumSource(PostPath.class)
    void theGranteesSendWithInvalidateRevokesTheWindow(PostPath path) {
        Grant g = grant(MemoryWindowType.TYPE_2);
        try (RcPair p = g.pair()) {
            RemoteBuffer remote = bind(g, path, WINDOW_AT, WINDOW_LENGTH, READ_WRITE);
            assertEquals(WcStatus.SUCCESS, write(p, remote.address(), remote.rkey(), 8));
            ReceiveRequests recv = new ReceiveRequests(1, 1);
            recv.set(0, 300).sge(0, 0, p.b.mr, 0, 16);
            p.b.qp.postReceive(recv, 1);
            if (path == PostPath.CLASSIC) {
                SendRequests send = new SendRequests(1, 1);
                send.set(0, 3, SendOpcode.SEND_WITH_INV, SIGNALED).sge(0, 0, p.a.mr, 0, 16).invalidate(0, remote.rkey());
                p.a.qp.postSend(send, 1);
            } else {
                ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
                sq.start();
                sq.wrId(3).flags(SIGNALED).sendWithInvalidate(remote.rkey()).sge(p.a.mr, 0, 16);
                sq.complete();
            }
            assertEquals(3, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(300, Completions.awaitSuccess(p.b.cq, T).wrId(0));
            assertEquals(WcStatus.SUCCESS, read(p, g.region().address(), g.region().rkey(), 64));
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, remote.address(), remote.rkey(), 8));
        }
    }

    @ParameterizedTest
    @EnumSource(PostPath.class)
    void anInvalidatedWindowBindsAgainWithANewKey(PostPath path) {
        Grant g = grant(MemoryWindowType.TYPE_2);
        try (RcPair p = g.pair()) {
            RemoteBuffer first = bind(g, path, WINDOW_AT, WINDOW_LENGTH, READ_WRITE);
            localInvalidate(g, path, first.rkey());
            RemoteBuffer second = bind(g, path, 0, 1024, READ_WRITE);
            assertNotEquals(first.rkey(), second.rkey());
            assertEquals(first.rkey() & ~0xff, second.rkey() & ~0xff, "only the key's tag byte changes");
            assertEquals(WcStatus.SUCCESS, read(p, second.address(), second.rkey(), 64));
            assertEquals(WcStatus.REM_ACCESS_ERR, read(p, first.address(), first.rkey(), 64));
        }
    }

    @Test
    void aType1WindowIsBoundWithBindAndRebindingKillsTheOldKey() {
        Grant g = grant(MemoryWindowType.TYPE_1);
        try (RcPair p = g.pair()) {
            MemoryWindow w = g.window();
            RemoteBuffer first = w.bind(p.b.qp, g.region(), WINDOW_AT, WINDOW_LENGTH, READ_WRITE, 7, SIGNALED);
            WorkCompletions wc = Completions.awaitSuccess(p.b.cq, T);
            assertEquals(7, wc.wrId(0));
            assertEquals(WcOpcode.BIND_MW, wc.opcode(0));
            assertEquals(first.rkey(), w.rkey());
            assertEquals(WcStatus.SUCCESS, read(p, first.address(), first.rkey(), 64));

            RemoteBuffer second = w.bind(p.b.qp, g.region(), 0, 1024, READ_WRITE, 8, SIGNALED);
            assertEquals(8, Completions.awaitSuccess(p.b.cq, T).wrId(0));
            assertNotEquals(first.rkey(), second.rkey());
            assertEquals(WcStatus.SUCCESS, read(p, second.address(), second.rkey(), 64));
            assertEquals(WcStatus.REM_ACCESS_ERR, read(p, first.address(), first.rkey(), 64));
        }
    }

    @Test
    void eachTypeIsBoundItsOwnWay() {
        try (RcPair p = RcPair.openExtended(OPS)) {
            MemoryRegion region = p.pd.register(p.b.buffer, REGION);
            MemoryWindow one = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_1);
            MemoryWindow two = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
            assertThrows(IllegalStateException.class, () -> two.bind(p.b.qp, region, 0, 64, READ_WRITE, 1, SIGNALED));
            SendRequests bind = new SendRequests(1, 1);
            bind.set(0, 1, SendOpcode.BIND_MW, SIGNALED);
            assertThrows(IllegalStateException.class, () -> bind.bindWindow(0, one, region, 0, 64, READ_WRITE));
            ExtendedSendQueue sq = p.b.qp.extendedSendQueue();
            sq.start();
            assertThrows(IllegalStateException.class, () -> sq.bindWindow(one, region, 0, 64, READ_WRITE));
            // What the kernel would only report as a failed bind completion (and an errored QP).
            assertThrows(IllegalArgumentException.class, () -> sq.bindWindow(two, p.b.mr, 0, 64, READ_WRITE),
                    "a region without MW_BIND");
            assertThrows(IndexOutOfBoundsException.class,
                    () -> sq.bindWindow(two, region, RcPair.BUFFER - 32, 64, READ_WRITE));
            assertThrows(IllegalArgumentException.class,
                    () -> sq.bindWindow(two, region, 0, 64, AccessFlags.of(AccessFlag.LOCAL_WRITE)));
            sq.abort();
            assertNull(two.boundRegion());
        }
    }

    @Test
    void aBoundWindowHoldsItsRegionAndClosesWithItsQueuePair() {
        Grant g = grant(MemoryWindowType.TYPE_2);
        try (RcPair p = g.pair()) {
            bind(g, PostPath.CLASSIC, WINDOW_AT, WINDOW_LENGTH, READ_WRITE);
            assertSame(g.region(), g.window().boundRegion());
            assertEquals(1, g.region().boundWindowCount());
            IllegalStateException held = assertThrows(IllegalStateException.class, g.region()::close);
            assertTrue(held.getMessage().contains("memory window"), held::getMessage);
            assertFalse(g.region().isClosed());
            // Still registered: the peer reads through the region's own key.
            assertEquals(WcStatus.SUCCESS, read(p, g.region().address(), g.region().rkey(), 64));

            p.b.qp.close();
            assertTrue(g.window().isClosed(), "a type-2 window bound through a QP closes with it");
            assertEquals(0, g.region().boundWindowCount());
            g.region().close();
            assertTrue(g.region().isClosed());
        }
    }

    @Test
    void closingTheProtectionDomainClosesBoundWindowsFirst() {
        Grant g = grant(MemoryWindowType.TYPE_1);
        try (RcPair p = g.pair()) {
            g.window().bind(p.b.qp, g.region(), 0, 4096, READ_WRITE, 1, SIGNALED);
            Completions.awaitSuccess(p.b.cq, T);
            MemoryWindow idle = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
            p.pd.close();
            assertTrue(g.window().isClosed());
            assertTrue(idle.isClosed());
            assertTrue(g.region().isClosed());
            assertThrows(IllegalStateException.class, g.window()::rkey);
        }
    }
}
