package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;

/** Failures the device reports: error completions, flushes and asynchronous QP events, all typed. */
class ErrorsIT {
    private static final Duration T = Duration.ofSeconds(15);

    @Test
    void writeToARegionWithoutRemoteAccessFailsWithRemoteAccessError() {
        try (RcPair p = RcPair.open(QpType.RC, AccessFlags.LOCAL_WRITE, QpConnectOptions.DEFAULTS)) {
            SendRequests send = new SendRequests(2, 1);
            // The rkey is real but the region grants no remote write.
            send.set(0, 1, SendOpcode.RDMA_WRITE, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 16)
                    .rdma(0, p.b.mr.address(), p.b.mr.rkey());
            p.a.qp.postSend(send, 1);
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.a.cq, wc, T);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(0), wc.describe(0));
            assertEquals(1, wc.wrId(0));
            assertTrue(wc.describe(0).contains("remote access error"), wc.describe(0));

            // The failure moved the requester QP to ERROR: what is posted now flushes.
            assertEquals(QpState.ERR, p.a.qp.state());
            send.set(0, 2, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 8);
            p.a.qp.postSend(send, 1);
            Completions.awaitOne(p.a.cq, wc, T);
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(0));
            assertEquals(2, wc.wrId(0));

        }
    }

    @Test
    void completionQueueOverflowRaisesAnAsyncEventAndFailsTheQp() {
        try (RcPair p = RcPair.open(); var arena = java.lang.foreign.Arena.ofConfined()) {
            // A receive CQ far smaller than the traffic, never polled: the device must report the overflow.
            CompletionQueue tiny = p.context.createCompletionQueue(1, null, 0);
            QueuePair rx = p.pd.createQueuePair(QpInitAttributes.builder(QpType.RC).sendCompletionQueue(p.b.cq)
                    .receiveCompletionQueue(tiny).depth(8, 64).build());
            QueuePair tx = p.pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(p.a.cq)
                    .depth(64, 8).build());
            QpConnectOptions o = QpConnectOptions.builder().retryCount(1).timeout(8).build();
            tx.connect(rx.localEndpoint(o, 1), 2, o);
            rx.connect(tx.localEndpoint(o, 2), 1, o);
            int n = tiny.capacity() + 8;
            ReceiveRequests recv = new ReceiveRequests(n, 1);
            SendRequests send = new SendRequests(n, 1);
            for (int i = 0; i < n; i++) {
                recv.set(i, i).sge(i, 0, p.b.mr, 64L * i, 64);
                send.set(i, i, SendOpcode.SEND, 0).sge(i, 0, p.a.mr, 0, 8);
            }
            rx.postReceive(recv, n);
            tx.postSend(send, n);

            List<AsyncEvent> events = new ArrayList<>();
            long deadline = System.nanoTime() + T.toNanos();
            while (System.nanoTime() < deadline
                    && events.stream().noneMatch(x -> x.type() == AsyncEventType.CQ_ERR)) {
                AsyncEvent e = p.context.awaitAsyncEvent(Duration.ofMillis(500));
                if (e != null) {
                    events.add(e);
                }
            }
            assertTrue(events.stream().anyMatch(x -> x.type() == AsyncEventType.CQ_ERR), () -> "events: " + events);
            // The receiver could not complete its work: its QP is in error now.
            long until = System.nanoTime() + T.toNanos();
            while (rx.state() != QpState.ERR && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            assertEquals(QpState.ERR, rx.state());
        }
    }

    @Test
    void movingToErrorFlushesEveryPostedReceive() {
        try (RcPair p = RcPair.open()) {
            ReceiveRequests recv = new ReceiveRequests(3, 1);
            for (int i = 0; i < 3; i++) {
                recv.set(i, 40 + i).sge(i, 0, p.b.mr, 100L * i, 100);
            }
            p.b.qp.postReceive(recv, 3);
            p.b.qp.modifyToError();
            assertEquals(QpState.ERR, p.b.qp.state());
            WorkCompletions wc = new WorkCompletions(8);
            List<Long> flushed = new ArrayList<>();
            long deadline = System.nanoTime() + T.toNanos();
            while (flushed.size() < 3 && System.nanoTime() < deadline) {
                int n = p.b.cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(i), wc.describe(i));
                    flushed.add(wc.wrId(i));
                }
            }
            assertEquals(List.of(40L, 41L, 42L), flushed);
        }
    }

    @Test
    void overfillingTheSendQueueIsATypedErrorNamingTheRequest() {
        try (RcPair p = RcPair.open()) {
            int depth = p.a.qp.maxSendWr();
            // Providers round queues up (rxe to a power of two), so chain far more than the depth granted.
            int n = 8 * depth;
            SendRequests send = new SendRequests(n, 1);
            for (int i = 0; i < n; i++) {
                send.set(i, i, SendOpcode.RDMA_WRITE, 0).sge(i, 0, p.a.mr, 0, 8)
                        .rdma(i, p.b.mr.address(), p.b.mr.rkey());
            }
            RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(RdmaException.class,
                    () -> p.a.qp.postSend(send, n));
            assertEquals("ibv_post_send", e.operation());
            assertNotNull(e.errnoName());
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("work request (\\d+) \\(wr_id=(\\d+)\\)")
                    .matcher(e.getMessage());
            assertTrue(m.find(), e.getMessage());
            int rejected = Integer.parseInt(m.group(1));
            assertTrue(rejected >= depth && rejected < n, e.getMessage());
            assertEquals(m.group(1), m.group(2), "wr_id names the same request");
        }
    }
}
