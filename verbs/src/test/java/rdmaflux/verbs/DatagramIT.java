package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RdmaTestEnv;

/** UD send/receive through an address handle, and receives from a shared receive queue. */
class DatagramIT {
    private static final Duration T = Duration.ofSeconds(10);
    private static final int GRH = 40;

    @Test
    void udSendThroughAnAddressHandle() {
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device()); Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cqA = ctx.createCompletionQueue(16, null, 0);
            CompletionQueue cqB = ctx.createCompletionQueue(16, null, 0);
            QueuePair a = pd.createQueuePair(QpInitAttributes.builder(QpType.UD).completionQueue(cqA).build());
            QueuePair b = pd.createQueuePair(QpInitAttributes.builder(QpType.UD).completionQueue(cqB).build());
            QpConnectOptions opts = QpConnectOptions.builder().qkey(0x1234).build();
            a.activateDatagram(opts, 0);
            b.activateDatagram(opts, 0);
            assertEquals(QpState.RTS, a.state());
            assertEquals(0x1234, b.query().qkey());

            MemorySegment bufA = arena.allocate(4096);
            MemorySegment bufB = arena.allocate(4096);
            MemoryRegion mrA = pd.register(bufA);
            MemoryRegion mrB = pd.register(bufB);
            // A UD receive buffer needs 40 spare bytes in front: the GRH lands there.
            b.postReceive(new ReceiveRequests(1, 1).set(0, 9).sge(0, 0, mrB, 0, GRH + 1024), 1);

            Gid dgid = ctx.queryGid(1, opts.gidIndex());
            AddressHandle ah = pd.createAddressHandle(AddressHandleAttributes.global(1, dgid, opts.gidIndex()));
            bufA.setString(0, "datagram", StandardCharsets.US_ASCII);
            a.postSend(new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED))
                    .sge(0, 0, mrA, 0, 9).ud(0, ah, b.number(), 0x1234), 1);
            Completions.awaitSuccess(cqA, T);
            WorkCompletions r = Completions.awaitSuccess(cqB, T);
            assertEquals(9, r.wrId(0));
            assertEquals(GRH + 9, r.byteLength(0));
            assertTrue(r.hasGrh(0));
            assertEquals(a.number(), r.sourceQp(0));
            assertEquals("datagram", bufB.getString(GRH, StandardCharsets.US_ASCII));
        }
    }

    @Test
    void sharedReceiveQueueFeedsAQueuePair() {
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device()); Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(32, null, 0);
            SharedReceiveQueue srq = pd.createSharedReceiveQueue(16, 1, 0);
            QueuePair a = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).build());
            QueuePair b = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                    .sharedReceiveQueue(srq).build());
            QpConnectOptions o = QpConnectOptions.DEFAULTS;
            a.connect(b.localEndpoint(o, 7), 8, o);
            b.connect(a.localEndpoint(o, 8), 7, o);

            MemorySegment buf = arena.allocate(8192);
            MemoryRegion mr = pd.register(buf);
            ReceiveRequests recv = new ReceiveRequests(4, 1);
            for (int i = 0; i < 4; i++) {
                recv.set(i, 1000 + i).sge(i, 0, mr, 4096 + 256L * i, 256);
            }
            srq.postReceive(recv, 4);
            srq.armLimit(2);
            assertEquals(2, srq.queryLimit());

            SendRequests send = new SendRequests(3, 1);
            for (int i = 0; i < 3; i++) {
                buf.setString(64L * i, "srq" + i, StandardCharsets.US_ASCII);
                send.set(i, i, SendOpcode.SEND, 0).sge(i, 0, mr, 64L * i, 5);
            }
            send.set(2, 2, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(2, 0, mr, 128, 5);
            a.postSend(send, 3);

            WorkCompletions wc = new WorkCompletions(8);
            int receives = 0;
            boolean sendDone = false;
            long deadline = System.nanoTime() + T.toNanos();
            while ((receives < 3 || !sendDone) && System.nanoTime() < deadline) {
                int n = cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    assertTrue(wc.isSuccess(i), wc.describe(i));
                    if (wc.opcode(i) == WcOpcode.RECV) {
                        assertEquals(b.number(), wc.qpNumber(i));
                        assertEquals(1000 + receives, wc.wrId(i));
                        receives++;
                    } else {
                        sendDone = true;
                    }
                }
            }
            assertEquals(3, receives);
            for (int i = 0; i < 3; i++) {
                assertEquals("srq" + i, buf.getString(4096 + 256L * i, StandardCharsets.US_ASCII));
            }
            // 4 posted, 3 consumed: below the limit of 2, so the device raised SRQ_LIMIT_REACHED.
            AsyncEvent e = ctx.awaitAsyncEvent(T);
            assertEquals(AsyncEventType.SRQ_LIMIT_REACHED, e == null ? null : e.type());
        }
    }
}
