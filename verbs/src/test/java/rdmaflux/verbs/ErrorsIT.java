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

            // The responder saw the access violation too and reports it asynchronously.
            List<AsyncEvent> events = new ArrayList<>();
            long deadline = System.nanoTime() + T.toNanos();
            while (System.nanoTime() < deadline && events.stream().noneMatch(x -> x.qpNumber() == p.b.qp.number())) {
                AsyncEvent e = p.context.awaitAsyncEvent(Duration.ofMillis(500));
                if (e != null) {
                    events.add(e);
                }
            }
            assertTrue(events.stream().anyMatch(x -> x.qpNumber() == p.b.qp.number()
                            && (x.type() == AsyncEventType.QP_ACCESS_ERR || x.type() == AsyncEventType.QP_FATAL
                            || x.type() == AsyncEventType.QP_REQ_ERR)),
                    () -> "async events: " + events);
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
            SendRequests send = new SendRequests(depth + 1, 1);
            for (int i = 0; i <= depth; i++) {
                // Unsignaled writes to our own buffer; the queue cannot take depth + 1 at once.
                send.set(i, i, SendOpcode.RDMA_WRITE, 0).sge(i, 0, p.a.mr, 0, 8)
                        .rdma(i, p.b.mr.address(), p.b.mr.rkey());
            }
            RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(RdmaException.class,
                    () -> p.a.qp.postSend(send, depth + 1));
            assertEquals("ibv_post_send", e.operation());
            assertNotNull(e.errnoName());
            assertTrue(e.getMessage().contains("work request " + depth), e.getMessage());
        }
    }
}
