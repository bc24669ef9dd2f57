package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.ffi.ibv_send_wr;

/** The pre-allocated work-request batches and value types, without a device. */
class WorkRequestBatchTest {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);

    @Test
    void sendRequestsWriteTheNativeStructsInPlaceAndChainThem() {
        SendRequests s = new SendRequests(3, 2);
        s.set(0, 11, SendOpcode.RDMA_WRITE, SendFlag.mask(SendFlag.SIGNALED, SendFlag.FENCE))
                .sge(0, 0, 0x1000, 64, 7).sge(0, 1, 0x2000, 32, 8).rdma(0, 0xABCDEF00L, 99).immediate(0, 0x01020304);
        s.set(1, 12, SendOpcode.SEND, 0).sge(1, 0, 0x3000, 16, 9);
        var head = s.chain(2, 2);
        assertEquals(11, ibv_send_wr.wr_id(head));
        assertEquals(SendOpcode.RDMA_WRITE.value(), ibv_send_wr.opcode(head));
        assertEquals(3, ibv_send_wr.send_flags(head));
        assertEquals(2, ibv_send_wr.num_sge(head));
        assertEquals(0x04030201, ibv_send_wr.imm_data(head), "immediate travels in network order");
        assertEquals(0xABCDEF00L, ibv_send_wr.wr.rdma.remote_addr(ibv_send_wr.wr.rdma(ibv_send_wr.wr(head))));
        var second = head.asSlice(ibv_send_wr.sizeof());
        assertEquals(second.address(), ibv_send_wr.next(head).address());
        assertEquals(0L, ibv_send_wr.next(second).address(), "the chain ends at count");
        var sge1 = ibv_send_wr.sg_list(head).reinterpret(32);
        assertEquals(0x2000L, sge1.get(ValueLayout.JAVA_LONG, 16));
        // set() clears the SGE count so a reused slot never carries stale entries.
        s.set(0, 13, SendOpcode.SEND, 0);
        assertEquals(0, s.sgeCount(0));
    }

    @Test
    void addedFlagsReachTheNativeStructAndTheNextSetClearsThem() {
        // A chain written unsignaled is signaled at its end once the writer knows where that is.
        SendRequests s = new SendRequests(2, 1);
        s.set(0, 1, SendOpcode.SEND, SendFlag.INLINE.value()).sge(0, 0, 0x1000, 8, 7);
        s.set(1, 2, SendOpcode.SEND, 0).sge(1, 0, 0x1000, 8, 7);
        s.addFlags(1, SIGNALED);
        assertEquals(SIGNALED, s.flags(1));
        assertEquals(SendFlag.INLINE.value(), s.flags(0));
        var head = s.chain(2, 1);
        assertEquals(SendFlag.INLINE.value(), ibv_send_wr.send_flags(head));
        assertEquals(SIGNALED, ibv_send_wr.send_flags(head.asSlice(ibv_send_wr.sizeof())));
        s.set(1, 3, SendOpcode.SEND, 0);
        assertEquals(0, s.flags(1));
        assertEquals(0, ibv_send_wr.send_flags(s.chain(2, 1).asSlice(ibv_send_wr.sizeof())));
    }

    @Test
    void reusedSlotsHoldExactlyTheLastValuesSetEvenWhereUnionMembersOverlap() {
        // The batch skips writes of values native memory already holds; overlapping union members of
        // different widths (rdma.rkey is an int where atomic.compare_add is a long) must not fool it.
        SendRequests s = new SendRequests(2, 2);
        s.set(0, 1, SendOpcode.ATOMIC_FETCH_AND_ADD, 0).sge(0, 0, 0x1000, 8, 7)
                .atomic(0, 0x8000, 5, 0x0000_0009_0000_0005L, 0);
        s.chain(1, 2);
        s.set(0, 2, SendOpcode.RDMA_WRITE, 0).sge(0, 0, 0x1000, 8, 7).rdma(0, 0x8000, 5);
        var wr = s.chain(1, 2);
        var rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr));
        var atomic = ibv_send_wr.wr.atomic(ibv_send_wr.wr(wr));
        assertEquals(5, ibv_send_wr.wr.rdma.rkey(rdma));
        assertEquals(0x0000_0009_0000_0005L, ibv_send_wr.wr.atomic.compare_add(atomic),
                "rdma() wrote only the 4 bytes of rkey; the rest of the union is what atomic() left");
        s.atomic(0, 0x8000, 5, 5, 0);
        assertEquals(5L, ibv_send_wr.wr.atomic.compare_add(atomic), "equal low half, different high half");

        // Entry count and immediate are reset by set() and reach native memory when the request is linked.
        s.set(0, 3, SendOpcode.SEND_WITH_IMM, 0).immediate(0, 42).sge(0, 0, 0x1000, 8, 7).sge(0, 1, 0x2000, 8, 7);
        s.chain(1, 2);
        assertEquals(2, ibv_send_wr.num_sge(wr));
        assertEquals(Integer.reverseBytes(42), ibv_send_wr.imm_data(wr));
        s.set(0, 4, SendOpcode.SEND, 0).sge(0, 0, 0x3000, 16, 9);
        assertEquals(1, s.sgeCount(0));
        s.chain(1, 2);
        assertEquals(1, ibv_send_wr.num_sge(wr));
        assertEquals(0, ibv_send_wr.imm_data(wr), "set() cleared the immediate");
        assertEquals(4, ibv_send_wr.wr_id(wr));
        assertEquals(SendOpcode.SEND.value(), ibv_send_wr.opcode(wr));
        assertEquals(0x3000L, ibv_send_wr.sg_list(wr).reinterpret(16).get(ValueLayout.JAVA_LONG, 0));

        // A chain of two, then one: the first request's link is cut again.
        s.set(1, 5, SendOpcode.SEND, 0).sge(1, 0, 0x4000, 16, 9);
        s.chain(2, 2);
        assertEquals(wr.address() + ibv_send_wr.sizeof(), ibv_send_wr.next(wr).address());
        s.chain(1, 2);
        assertEquals(0L, ibv_send_wr.next(wr).address());
    }

    @Test
    void receiveRequestsKeepTheirEntriesAcrossPosts() {
        ReceiveRequests r = new ReceiveRequests(1, 2);
        r.set(0, 9).sge(0, 0, 0x1000, 64, 3).sge(0, 1, 0x2000, 64, 3);
        var wr = r.chain(1, 2);
        assertEquals(2, rdmaflux.verbs.ffi.ibv_recv_wr.num_sge(wr));
        assertThrows(IllegalArgumentException.class, () -> r.chain(1, 1), "the queue takes one entry only");
        r.set(0, 10).sge(0, 0, 0x1000, 64, 3);
        r.chain(1, 2);
        assertEquals(1, rdmaflux.verbs.ffi.ibv_recv_wr.num_sge(wr));
        assertEquals(10, rdmaflux.verbs.ffi.ibv_recv_wr.wr_id(wr));
    }

    @Test
    void fillingAndLinkingAllocatesNothing() {
        SendRequests s = new SendRequests(4, 2);
        ReceiveRequests r = new ReceiveRequests(1, 1);
        WorkCompletions wc = new WorkCompletions(4);
        long[] sum = new long[1];
        AllocationProbe.assertNoSteadyAllocation("10000 fill-and-link rounds",
                () -> sum[0] += fillAndLink(s, r, wc, 10_000));
        assertTrue(sum[0] > 0);
    }

    private static long fillAndLink(SendRequests s, ReceiveRequests r, WorkCompletions wc, int rounds) {
        long sum = 0;
        for (int n = 0; n < rounds; n++) {
            s.set(0, n, SendOpcode.RDMA_WRITE, n % 100 == 0 ? SIGNALED : 0).sge(0, 0, 0x1000, 2, 7).rdma(0, 0x8000, 5);
            s.set(1, n, SendOpcode.SEND_WITH_IMM, 0).immediate(1, n).sge(1, 0, 0x1000, 16, 7).sge(1, 1, 0x2000, 64, 7);
            s.link(n % 2 + 1, 2);
            r.set(0, -1).sge(0, 0, 0x3000, 4096, 7);
            r.link(1, 1);
            sum += s.wrId(n % 2) + s.sgeCount(1) + wc.capacity();
        }
        return sum;
    }

    @Test
    void badIndicesAndSizesAreRefused() {
        SendRequests s = new SendRequests(2, 1);
        assertThrows(IndexOutOfBoundsException.class, () -> s.set(2, 0, SendOpcode.SEND, 0));
        assertThrows(IllegalArgumentException.class, () -> s.sge(0, 1, 0, 8, 0));
        assertThrows(IllegalArgumentException.class, () -> s.sge(0, 0, 0, -1, 0));
        assertThrows(IllegalArgumentException.class, () -> s.chain(0, 1));
        assertThrows(IllegalArgumentException.class, () -> s.chain(3, 1));
        assertThrows(IllegalArgumentException.class, () -> s.atomic(0, 0x1001, 1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new ReceiveRequests(0, 1));
        assertThrows(IllegalArgumentException.class, () -> new WorkCompletions(0));
        assertThrows(IndexOutOfBoundsException.class, () -> new WorkCompletions(4).wrId(0));
        assertThrows(IllegalArgumentException.class, () -> QpConnectOptions.builder().rnrRetry(8).build());
        assertThrows(IllegalArgumentException.class, () -> QpConnectOptions.builder().port(0).build());
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 1 << 24, 0, Gid.ZERO, Mtu.MTU_1024));
        assertThrows(IllegalArgumentException.class,
                () -> ConnectionParameters.DEFAULTS.withPrivateData(new byte[256]));
        assertThrows(IllegalArgumentException.class, () -> Gid.of(new byte[15]));
    }

    @Test
    void valueTypesRoundTrip() {
        RemoteBuffer rb = new RemoteBuffer(0x7f0000001000L, 4096, 0x1234);
        ByteBuffer buf = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
        rb.writeTo(buf);
        assertEquals(rb, RemoteBuffer.readFrom(buf.flip()));
        assertEquals(new RemoteBuffer(0x7f0000001010L, 16, 0x1234), rb.slice(16, 16));
        assertThrows(IndexOutOfBoundsException.class, () -> rb.slice(4000, 200));

        byte[] raw = new byte[16];
        raw[10] = (byte) 0xff;
        raw[11] = (byte) 0xff;
        raw[12] = (byte) 192;
        raw[15] = 1;
        QpEndpoint ep = new QpEndpoint(17, 0xABCDE, 0, Gid.of(raw), Mtu.MTU_1024);
        ByteBuffer eb = ByteBuffer.allocate(QpEndpoint.ENCODED_SIZE);
        ep.writeTo(eb);
        assertEquals(ep, QpEndpoint.readFrom(eb.flip()));
        assertEquals("0000:0000:0000:0000:0000:ffff:c000:0001", Gid.of(raw).toString());
        assertEquals("/192.0.0.1", Gid.of(raw).toInetAddress().toString());

        AccessFlags remoteWrite = AccessFlags.of(AccessFlag.REMOTE_WRITE);
        assertTrue(remoteWrite.contains(AccessFlag.LOCAL_WRITE), "verbs requires local write with remote write");
        assertFalse(AccessFlags.LOCAL_WRITE.contains(AccessFlag.REMOTE_READ));
        assertEquals(AccessFlags.fromMask(AccessFlags.REMOTE_ALL.mask()), AccessFlags.REMOTE_ALL);
    }
}
