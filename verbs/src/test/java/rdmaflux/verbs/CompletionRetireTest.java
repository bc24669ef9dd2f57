package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * How a polled completion finds the queue whose requests it ends, on the fake QP whose send and receive
 * completions share one CQ (the hard case: the CQ does not tell the queues apart).
 */
class CompletionRetireTest {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final int WR_FLUSH_ERR = WcStatus.WR_FLUSH_ERR.value();

    private final FakeProvider fake = new FakeProvider(1, 1);
    private final SendRequests send = new SendRequests(1, 1);
    private final ReceiveRequests receive = new ReceiveRequests(1, 1);

    private void postSend(long wrId, int flags) {
        send.set(0, wrId, SendOpcode.SEND, flags).sge(0, 0, fake.mr, 0, 8);
        fake.qp.postSend(send, 1);
    }

    private void postReceive(long wrId) {
        receive.set(0, wrId).sge(0, 0, fake.mr, 64, 64);
        fake.qp.postReceive(receive, 1);
    }

    @Test
    void aSuccessfulCompletionsOpcodeNamesItsQueue() {
        postSend(1, SIGNALED);
        postReceive(1);
        assertEquals(2, fake.mr.workLeaseCount());
        fake.complete(1, WcOpcode.RECV);
        assertEquals(1, fake.qp.outstandingSends());
        assertEquals(0, fake.qp.outstandingReceives());
        fake.complete(1, WcOpcode.SEND);
        assertEquals(0, fake.qp.outstandingSends());
        assertEquals(0, fake.mr.workLeaseCount());
    }

    @Test
    void anUnsignaledSendEndsWithTheNextSignaledOne() {
        postSend(1, 0);
        postSend(2, 0);
        postSend(3, SIGNALED);
        fake.complete(3, WcOpcode.SEND);
        assertEquals(0, fake.qp.outstandingSends());
        assertEquals(0, fake.mr.workLeaseCount());
    }

    @Test
    void aFailedCompletionIsPlacedByItsIdWhenOnlyOneQueueHasIt() {
        postSend(10, SIGNALED);
        postReceive(20);
        // rxe reports a flushed receive with opcode IBV_WC_SEND: the opcode of a failed completion means nothing.
        fake.complete(20, WR_FLUSH_ERR, WcOpcode.SEND.value());
        assertEquals(0, fake.qp.outstandingReceives());
        assertEquals(1, fake.qp.outstandingSends());
        fake.complete(10, WR_FLUSH_ERR, WcOpcode.RECV.value());
        assertEquals(0, fake.qp.outstandingSends());
        assertEquals(0, fake.mr.workLeaseCount());
    }

    @Test
    void aFailedCompletionWhoseIdBothQueuesHaveRetiresNothingUntilTheNextOne() {
        postSend(7, SIGNALED);
        postReceive(7);
        postReceive(8);
        fake.complete(7, WR_FLUSH_ERR, 0);
        assertEquals(1, fake.qp.outstandingSends(), "ambiguous: kept");
        assertEquals(2, fake.qp.outstandingReceives(), "ambiguous: kept");
        // The next flushed receive is the receive queue's: it ends 7 there as well.
        fake.complete(8, WR_FLUSH_ERR, 0);
        assertEquals(0, fake.qp.outstandingReceives());
        assertEquals(1, fake.qp.outstandingSends());
        // Now only the send queue has 7.
        fake.complete(7, WR_FLUSH_ERR, 0);
        assertEquals(0, fake.mr.workLeaseCount());
    }

    @Test
    void aCompletionOfAnotherQpRetiresNothing() {
        postSend(1, SIGNALED);
        fake.complete(1, 0, WcOpcode.SEND.value());
        postSend(2, SIGNALED);
        WorkCompletions wc = new WorkCompletions(1);
        rdmaflux.verbs.ffi.ibv_wc.wr_id(wc.segment(), 2);
        rdmaflux.verbs.ffi.ibv_wc.qp_num(wc.segment(), fake.qp.number() + 1);
        fake.cq.deliver(wc, 1);
        assertEquals(1, fake.qp.outstandingSends());
        assertEquals(1, fake.mr.workLeaseCount());
    }
}
