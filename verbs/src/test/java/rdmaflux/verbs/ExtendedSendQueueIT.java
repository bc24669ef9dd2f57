package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The extended post API (ibv_wr_*) on a real RC pair: every operation Soft-RoCE can do, several in one
 * batch, each checked at the receiving end; what it cannot do refused with typed errors.
 */
class ExtendedSendQueueIT {
    private static final Duration T = Duration.ofSeconds(30);
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final Set<SendOp> RC_OPS = EnumSet.of(SendOp.SEND, SendOp.SEND_WITH_IMM, SendOp.RDMA_WRITE,
            SendOp.RDMA_WRITE_WITH_IMM, SendOp.RDMA_READ, SendOp.ATOMIC_CMP_AND_SWP, SendOp.ATOMIC_FETCH_AND_ADD);

    @Test
    void sendAndSendWithImmediateInOneBatch() {
        try (RcPair p = RcPair.openExtended(RC_OPS)) {
            ReceiveRequests recv = new ReceiveRequests(2, 1);
            recv.set(0, 10).sge(0, 0, p.b.mr, 0, 16);
            recv.set(1, 11).sge(1, 0, p.b.mr, 16, 16);
            p.b.qp.postReceive(recv, 2);
            p.a.buffer.asSlice(0, 32).fill((byte) 0x5a);
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(1).flags(SIGNALED).send().sge(p.a.mr, 0, 16);
            sq.wrId(2).flags(SIGNALED).sendWithImm(0x1234abcd).sge(p.a.mr, 16, 16);
            sq.complete();

            assertEquals(1, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(2, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            WorkCompletions first = Completions.awaitSuccess(p.b.cq, T);
            assertEquals(10, first.wrId(0));
            assertEquals(16, first.byteLength(0));
            WorkCompletions second = Completions.awaitSuccess(p.b.cq, T);
            assertEquals(11, second.wrId(0));
            assertTrue(second.hasImmediate(0));
            assertEquals(0x1234abcd, second.immediateData(0));
            for (int i = 0; i < 32; i++) {
                assertEquals((byte) 0x5a, p.b.buffer.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
        }
    }

    @Test
    void writeWriteWithImmediateAndReadBack() {
        try (RcPair p = RcPair.openExtended(RC_OPS)) {
            RemoteBuffer remote = p.b.mr.toRemoteBuffer();
            ReceiveRequests recv = new ReceiveRequests(1, 1);
            recv.set(0, 20).sge(0, 0, p.b.mr, 0, 16);
            p.b.qp.postReceive(recv, 1);
            for (int i = 0; i < 64; i++) {
                p.a.buffer.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            }
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(1).flags(SIGNALED).rdmaWrite(remote.rkey(), remote.address() + 1000).sge(p.a.mr, 0, 32);
            sq.wrId(2).flags(SIGNALED).rdmaWriteWithImm(remote.rkey(), remote.address() + 1032, 77)
                    .sge(p.a.mr, 32, 32);
            sq.complete();
            assertEquals(1, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(2, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            WorkCompletions imm = Completions.awaitSuccess(p.b.cq, T);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, imm.opcode(0));
            assertEquals(77, imm.immediateData(0));
            for (int i = 0; i < 64; i++) {
                assertEquals((byte) i, p.b.buffer.get(ValueLayout.JAVA_BYTE, 1000 + i), "written byte " + i);
            }

            sq.start();
            sq.wrId(3).flags(SIGNALED).rdmaRead(remote.rkey(), remote.address() + 1000).sge(p.a.mr, 2000, 64);
            sq.complete();
            assertEquals(3, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            for (int i = 0; i < 64; i++) {
                assertEquals((byte) i, p.a.buffer.get(ValueLayout.JAVA_BYTE, 2000 + i), "read byte " + i);
            }
        }
    }

    @Test
    void compareAndSwapThenFetchAndAdd() {
        try (RcPair p = RcPair.openExtended(RC_OPS)) {
            RemoteBuffer remote = p.b.mr.toRemoteBuffer();
            p.b.buffer.set(ValueLayout.JAVA_LONG, 4096, 5L);
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(1).flags(SIGNALED).compareAndSwap(remote.rkey(), remote.address() + 4096, 5, 9)
                    .sge(p.a.mr, 3000, 8);
            sq.complete();
            assertEquals(1, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(5L, p.a.buffer.get(ValueLayout.JAVA_LONG, 3000));
            assertEquals(9L, p.b.buffer.get(ValueLayout.JAVA_LONG, 4096));

            sq.start();
            sq.wrId(2).flags(SIGNALED).fetchAndAdd(remote.rkey(), remote.address() + 4096, 3).sge(p.a.mr, 3008, 8);
            sq.complete();
            assertEquals(2, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(9L, p.a.buffer.get(ValueLayout.JAVA_LONG, 3008));
            assertEquals(12L, p.b.buffer.get(ValueLayout.JAVA_LONG, 4096));
        }
    }

    @Test
    void abortPostsNothingAndTheQueueStaysUsable() {
        try (RcPair p = RcPair.openExtended(RC_OPS)) {
            RemoteBuffer remote = p.b.mr.toRemoteBuffer();
            p.a.buffer.set(ValueLayout.JAVA_LONG, 0, 42L);
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(1).flags(SIGNALED).rdmaWrite(remote.rkey(), remote.address()).sge(p.a.mr, 0, 8);
            sq.abort();
            sq.start();
            sq.wrId(2).flags(SIGNALED).rdmaWrite(remote.rkey(), remote.address() + 8).sge(p.a.mr, 0, 8);
            sq.complete();
            assertEquals(2, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(0L, p.b.buffer.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(42L, p.b.buffer.get(ValueLayout.JAVA_LONG, 8));
        }
    }

    /**
     * rdma-core 44's rxe provider accepts IBV_QP_EX_WITH_ATOMIC_WRITE, but the 6.1 kernel's rxe has no ATOMIC
     * WRITE (it came with 6.2) and would complete each request with LOC_QP_OP_ERR: the device does not report
     * IB_UVERBS_DEVICE_ATOMIC_WRITE, so the QP is refused at creation. Where it is reported, the write lands.
     */
    @Test
    void atomicWriteNeedsTheDevicesCapability() {
        try (RcPair p = RcPair.open()) {
            QpInitAttributes attrs = QpInitAttributes.builder(QpType.RC).completionQueue(p.a.cq).build();
            if (RdmaTestEnv.inSandbox()) {
                assertFalse(p.context.supportsAtomicWrite());
                RdmaUnsupportedException e = assertThrows(RdmaUnsupportedException.class,
                        () -> p.pd.createExtendedQueuePair(attrs, EnumSet.of(SendOp.SEND, SendOp.ATOMIC_WRITE)));
                assertEquals("ibv_create_qp_ex", e.operation());
                assertEquals(Errno.EOPNOTSUPP, e.errno());
                assertTrue(e.getMessage().contains("ATOMIC WRITE"), e::getMessage);
                return;
            }
            if (!p.context.supportsAtomicWrite()) {
                assertThrows(RdmaUnsupportedException.class,
                        () -> p.pd.createExtendedQueuePair(attrs, EnumSet.of(SendOp.ATOMIC_WRITE)));
                return;
            }
        }
        try (RcPair p = RcPair.openExtended(EnumSet.of(SendOp.ATOMIC_WRITE)); Arena arena = Arena.ofConfined()) {
            RemoteBuffer remote = p.b.mr.toRemoteBuffer();
            MemorySegment value = arena.allocate(ValueLayout.JAVA_LONG);
            value.set(ValueLayout.JAVA_LONG, 0, 0x0102030405060708L);
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(1).flags(SIGNALED).atomicWrite(remote.rkey(), remote.address() + 64, value);
            sq.complete();
            assertEquals(1, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(0x0102030405060708L, p.b.buffer.get(ValueLayout.JAVA_LONG, 64));
        }
    }

    /** TSO is for UD over Ethernet; Soft-RoCE's provider refuses it on RC (and UD) at creation. */
    @Test
    void tsoIsRefusedAtCreationOnSoftRoce() {
        try (RcPair p = RcPair.open()) {
            QpInitAttributes attrs = QpInitAttributes.builder(QpType.RC).completionQueue(p.a.cq).build();
            if (RdmaTestEnv.inSandbox()) {
                RdmaUnsupportedException e = assertThrows(RdmaUnsupportedException.class,
                        () -> p.pd.createExtendedQueuePair(attrs, EnumSet.of(SendOp.SEND, SendOp.TSO)));
                assertEquals(Errno.EOPNOTSUPP, e.errno());
            }
        }
    }

    /**
     * Invalidation is for memory windows ({@link MemoryWindowIT}) and fast-registration MRs: a plain MR's key
     * cannot be invalidated. Soft-RoCE executes both requests and reports that: the receiver of a
     * SEND with invalidate gets REM_INV_REQ_ERR (the sender's SEND itself completed), a local invalidate
     * completes with LOC_QP_OP_ERR.
     */
    @Test
    void invalidatingAPlainMemoryRegionFails() {
        try (RcPair p = RcPair.openExtended(EnumSet.of(SendOp.SEND_WITH_INV, SendOp.LOCAL_INV))) {
            ReceiveRequests recv = new ReceiveRequests(1, 1);
            recv.set(0, 30).sge(0, 0, p.b.mr, 0, 16);
            p.b.qp.postReceive(recv, 1);
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(1).flags(SIGNALED).sendWithInvalidate(p.b.mr.rkey()).sge(p.a.mr, 0, 16);
            sq.complete();
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.a.cq, wc, T);
            assertEquals(1, wc.wrId(0));
            WorkCompletions rwc = new WorkCompletions(1);
            Completions.awaitOne(p.b.cq, rwc, T);
            assertEquals(30, rwc.wrId(0));
            assertTrue(!rwc.isSuccess(0), rwc.describe(0));
            if (RdmaTestEnv.inSandbox()) {
                assertEquals(WcStatus.SUCCESS, wc.status(0), wc.describe(0));
                assertEquals(WcStatus.REM_INV_REQ_ERR, rwc.status(0), rwc.describe(0));
            }
        }
        try (RcPair p = RcPair.openExtended(EnumSet.of(SendOp.SEND_WITH_INV, SendOp.LOCAL_INV))) {
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            sq.start();
            sq.wrId(2).flags(SIGNALED).localInvalidate(p.a.mr.rkey());
            sq.complete();
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.a.cq, wc, T);
            assertEquals(2, wc.wrId(0));
            assertTrue(!wc.isSuccess(0), wc.describe(0));
            if (RdmaTestEnv.inSandbox()) {
                assertEquals(WcStatus.LOC_QP_OP_ERR, wc.status(0), wc.describe(0));
            }
        }
    }

    @Test
    void operationsTheDeviceCannotDoOnAQpTypeAreEopnotsupp() {
        try (RcPair p = RcPair.open()) {
            // Soft-RoCE's UD QPs send and send with immediate only.
            RdmaUnsupportedException e = assertThrows(RdmaUnsupportedException.class,
                    () -> p.pd.createExtendedQueuePair(QpInitAttributes.builder(QpType.UD).completionQueue(p.a.cq)
                            .build(), EnumSet.of(SendOp.SEND, SendOp.RDMA_WRITE)));
            assertEquals("ibv_create_qp_ex", e.operation());
            assertEquals(Errno.EOPNOTSUPP, e.errno());
        }
    }

    @Test
    void misuseIsAClearException() {
        try (RcPair p = RcPair.openExtended(EnumSet.of(SendOp.SEND))) {
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            IllegalStateException notStarted = assertThrows(IllegalStateException.class, sq::send);
            assertTrue(notStarted.getMessage().contains("start()"), notStarted::getMessage);
            sq.start();
            IllegalStateException notRequested = assertThrows(IllegalStateException.class,
                    () -> sq.rdmaWrite(1, 2));
            assertTrue(notRequested.getMessage().contains("RDMA_WRITE"), notRequested::getMessage);
            assertThrows(IllegalStateException.class, sq::start);
            sq.abort();
            assertThrows(IllegalArgumentException.class,
                    () -> p.pd.createExtendedQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(p.a.cq)
                            .build(), EnumSet.noneOf(SendOp.class)));
        }
        try (RcPair classic = RcPair.open()) {
            IllegalStateException e = assertThrows(IllegalStateException.class, classic.a.qp::extendedSendQueue);
            assertTrue(e.getMessage().contains("createExtendedQueuePair"), e::getMessage);
        }
    }
}
