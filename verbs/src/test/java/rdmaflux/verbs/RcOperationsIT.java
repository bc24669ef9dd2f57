package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;

/** Every RC operation between two connected QPs on the real device, with the data checked. */
class RcOperationsIT {
    private static final Duration T = Duration.ofSeconds(10);
    private RcPair p;
    private final SendRequests send = new SendRequests(4, 2);
    private final ReceiveRequests recv = new ReceiveRequests(4, 2);

    @BeforeEach
    void connect() {
        p = RcPair.open();
        assertEquals(QpState.RTS, p.a.qp.state());
        assertEquals(QpState.RTS, p.b.qp.state());
    }

    @AfterEach
    void close() {
        p.close();
    }

    private static void put(MemorySegment seg, long offset, String s) {
        seg.asSlice(offset).setString(0, s, StandardCharsets.US_ASCII);
    }

    private static String get(MemorySegment seg, long offset) {
        return seg.asSlice(offset).getString(0, StandardCharsets.US_ASCII);
    }

    @Test
    void sendAndReceive() {
        recv.set(0, 77).sge(0, 0, p.b.mr, 1000, 100);
        p.b.qp.postReceive(recv, 1);
        put(p.a.buffer, 0, "hello over rxe");
        send.set(0, 5, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 15);
        p.a.qp.postSend(send, 1);

        WorkCompletions s = Completions.awaitSuccess(p.a.cq, T);
        assertEquals(5, s.wrId(0));
        assertEquals(WcOpcode.SEND, s.opcode(0));
        WorkCompletions r = Completions.awaitSuccess(p.b.cq, T);
        assertEquals(77, r.wrId(0));
        assertEquals(WcOpcode.RECV, r.opcode(0));
        assertEquals(15, r.byteLength(0));
        assertEquals(p.b.qp.number(), r.qpNumber(0));
        assertFalse(r.hasImmediate(0));
        assertEquals("hello over rxe", get(p.b.buffer, 1000));
    }

    @Test
    void sendWithImmediateAndGatherFromTwoSges() {
        recv.set(0, 1).sge(0, 0, p.b.mr, 0, 256);
        p.b.qp.postReceive(recv, 1);
        put(p.a.buffer, 0, "abc");
        put(p.a.buffer, 500, "defg");
        send.set(0, 2, SendOpcode.SEND_WITH_IMM, SendFlag.mask(SendFlag.SIGNALED, SendFlag.SOLICITED))
                .sge(0, 0, p.a.mr, 0, 3).sge(0, 1, p.a.mr, 500, 4).immediate(0, 0xCAFEBABE);
        p.a.qp.postSend(send, 1);
        Completions.awaitSuccess(p.a.cq, T);
        WorkCompletions r = Completions.awaitSuccess(p.b.cq, T);
        assertTrue(r.hasImmediate(0));
        assertEquals(0xCAFEBABE, r.immediateData(0));
        assertEquals(7, r.byteLength(0));
        assertEquals("abcdefg", get(p.b.buffer, 0).substring(0, 7));
    }

    @Test
    void inlineSendNeedsNoRegisteredSource() {
        recv.set(0, 1).sge(0, 0, p.b.mr, 0, 64);
        p.b.qp.postReceive(recv, 1);
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment unregistered = arena.allocateFrom("inline!", StandardCharsets.US_ASCII);
            send.set(0, 3, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED, SendFlag.INLINE))
                    .sge(0, 0, unregistered.address(), 8, 0);
            p.a.qp.postSend(send, 1);
        }
        Completions.awaitSuccess(p.a.cq, T);
        Completions.awaitSuccess(p.b.cq, T);
        assertEquals("inline!", get(p.b.buffer, 0));
    }

    @Test
    void rdmaWriteThenWriteWithImmediate() {
        RemoteBuffer remote = p.b.mr.toRemoteBuffer();
        put(p.a.buffer, 0, "written remotely");
        send.set(0, 10, SendOpcode.RDMA_WRITE, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 17)
                .rdma(0, remote.address() + 2048, remote.rkey());
        p.a.qp.postSend(send, 1);
        WorkCompletions w = Completions.awaitSuccess(p.a.cq, T);
        assertEquals(WcOpcode.RDMA_WRITE, w.opcode(0));
        assertEquals("written remotely", get(p.b.buffer, 2048));

        // Write with immediate consumes a receive at the target and tells it the immediate.
        recv.set(0, 99).sge(0, 0, p.b.mr, 0, 1);
        p.b.qp.postReceive(recv, 1);
        put(p.a.buffer, 100, "second");
        send.set(0, 11, SendOpcode.RDMA_WRITE_WITH_IMM, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 100, 7)
                .rdma(0, remote.address() + 4096, remote.rkey()).immediate(0, 4096);
        p.a.qp.postSend(send, 1);
        Completions.awaitSuccess(p.a.cq, T);
        WorkCompletions r = Completions.awaitSuccess(p.b.cq, T);
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode(0));
        assertEquals(99, r.wrId(0));
        assertEquals(4096, r.immediateData(0));
        assertEquals("second", get(p.b.buffer, 4096));
    }

    @Test
    void rdmaRead() {
        put(p.b.buffer, 8192, "read me from b");
        RemoteBuffer remote = p.b.mr.toRemoteBuffer().slice(8192, 15);
        send.set(0, 20, SendOpcode.RDMA_READ, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 300, 15)
                .rdma(0, remote.address(), remote.rkey());
        p.a.qp.postSend(send, 1);
        WorkCompletions c = Completions.awaitSuccess(p.a.cq, T);
        assertEquals(WcOpcode.RDMA_READ, c.opcode(0));
        assertEquals(15, c.byteLength(0));
        assertEquals("read me from b", get(p.a.buffer, 300));
    }

    @Test
    void atomicsReturnTheOldValue() {
        long target = p.b.mr.address() + 64;
        p.b.buffer.set(ValueLayout.JAVA_LONG, 64, 42L);

        send.set(0, 30, SendOpcode.ATOMIC_CMP_AND_SWP, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 8)
                .atomic(0, target, p.b.mr.rkey(), 42L, 99L);
        p.a.qp.postSend(send, 1);
        assertEquals(WcOpcode.COMP_SWAP, Completions.awaitSuccess(p.a.cq, T).opcode(0));
        assertEquals(42L, p.a.buffer.get(ValueLayout.JAVA_LONG, 0));
        assertEquals(99L, p.b.buffer.get(ValueLayout.JAVA_LONG, 64));

        // Compare fails now: the old value comes back and memory is untouched.
        send.set(0, 31, SendOpcode.ATOMIC_CMP_AND_SWP, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 8, 8)
                .atomic(0, target, p.b.mr.rkey(), 42L, 7L);
        p.a.qp.postSend(send, 1);
        Completions.awaitSuccess(p.a.cq, T);
        assertEquals(99L, p.a.buffer.get(ValueLayout.JAVA_LONG, 8));
        assertEquals(99L, p.b.buffer.get(ValueLayout.JAVA_LONG, 64));

        send.set(0, 32, SendOpcode.ATOMIC_FETCH_AND_ADD, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 16, 8)
                .atomic(0, target, p.b.mr.rkey(), 1_000_000_000_000L, 0);
        p.a.qp.postSend(send, 1);
        assertEquals(WcOpcode.FETCH_ADD, Completions.awaitSuccess(p.a.cq, T).opcode(0));
        assertEquals(99L, p.a.buffer.get(ValueLayout.JAVA_LONG, 16));
        assertEquals(1_000_000_000_099L, p.b.buffer.get(ValueLayout.JAVA_LONG, 64));
    }

    @Test
    void chainOfWorkRequestsCompletesInOrder() {
        for (int i = 0; i < 3; i++) {
            recv.set(i, 100 + i).sge(i, 0, p.b.mr, 128L * i, 128);
        }
        p.b.qp.postReceive(recv, 3);
        for (int i = 0; i < 3; i++) {
            put(p.a.buffer, 64L * i, "msg" + i);
            send.set(i, 200 + i, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(i, 0, p.a.mr, 64L * i, 5);
        }
        p.a.qp.postSend(send, 3);
        WorkCompletions wc = new WorkCompletions(8);
        int got = 0;
        long deadline = System.nanoTime() + T.toNanos();
        long[] ids = new long[3];
        while (got < 3 && System.nanoTime() < deadline) {
            int n = p.b.cq.poll(wc);
            for (int i = 0; i < n; i++) {
                assertTrue(wc.isSuccess(i), wc.describe(i));
                ids[got++] = wc.wrId(i);
            }
        }
        assertEquals(3, got);
        assertEquals(100, ids[0]);
        assertEquals(102, ids[2]);
        for (int i = 0; i < 3; i++) {
            assertEquals("msg" + i, get(p.b.buffer, 128L * i));
        }
    }

    @Test
    void completionChannelWakesAWaitingThread() throws Exception {
        p.b.cq.requestNotification(false);
        CompletableFuture<CompletionQueue> woken = CompletableFuture.supplyAsync(
                () -> p.b.channel.awaitEvent(T));
        Thread.sleep(200); // let the waiter block in poll(2) first
        assertFalse(woken.isDone(), "woke up before anything was sent");
        recv.set(0, 1).sge(0, 0, p.b.mr, 0, 64);
        p.b.qp.postReceive(recv, 1);
        put(p.a.buffer, 0, "wake");
        send.set(0, 1, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 5);
        p.a.qp.postSend(send, 1);
        assertSame(p.b.cq, woken.get(T.toSeconds(), TimeUnit.SECONDS));
        WorkCompletions wc = new WorkCompletions(4);
        assertEquals(1, p.b.cq.poll(wc));
        assertEquals("wake", get(p.b.buffer, 0));
        // No re-arm, no event: the channel stays quiet.
        assertEquals(null, p.b.channel.awaitEvent(Duration.ofMillis(200)));
    }

    @Test
    void aCompletionLoopTurnAllocatesNothing() {
        // What a completion loop does per message when event-driven: wait on the channel, take the event
        // (and find no second one: the EAGAIN path), poll, re-arm; the sender polls its completion too.
        WorkCompletions wc = new WorkCompletions(4);
        int fd = p.b.channel.fd();
        recv.set(0, 1).sge(0, 0, p.b.mr, 0, 64);
        send.set(0, 2, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 8);
        int[] events = new int[1];
        AllocationProbe.assertNoSteadyAllocation("200 messages taken through completion events", () -> {
            for (int i = 0; i < 200; i++) {
                p.b.qp.postReceive(recv, 1);
                p.b.cq.requestNotification(false);
                p.a.qp.postSend(send, 1);
                CompletionQueue q;
                while ((q = p.b.channel.tryGetEvent()) == null) {
                    if (!Posix.pollIn(fd, (int) T.toMillis())) {
                        throw new AssertionError("no completion event within " + T);
                    }
                }
                if (q != p.b.cq || p.b.channel.tryGetEvent() != null) {
                    throw new AssertionError("one event, for the receiving CQ, expected");
                }
                events[0]++;
                awaitOne(p.b.cq, wc);
                awaitOne(p.a.cq, wc);
            }
        });
        assertTrue(events[0] >= 200);
    }

    private static void awaitOne(CompletionQueue cq, WorkCompletions wc) {
        long deadline = System.nanoTime() + T.toNanos();
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no completion within " + T);
            }
        }
        if (!wc.isSuccess(0)) {
            throw new AssertionError(wc.describe(0));
        }
    }
}
