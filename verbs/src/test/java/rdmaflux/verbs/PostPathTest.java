package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;

/**
 * Posting and polling through the real Java path (checks, links, lease, downcall) without a device: the
 * {@link FakeProvider}'s post and poll functions are a libc function that returns 0 after a store into the
 * first word of its first argument.
 */
class PostPathTest {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final int MARKER = 0x5a5a5a5a;

    @Test
    void postsReachTheProviderFunctionWithTheQueueAsFirstArgument() {
        FakeProvider fake = new FakeProvider(2, 1);
        // The fake post function overwrites the first word of what it gets as the queue (with 0 or 1, the
        // unlocked value of a spin lock): seeing the marker go proves the QP's address was the first argument.
        fake.qp.handle.set(ValueLayout.JAVA_INT, 0, MARKER);
        SendRequests s = new SendRequests(2, 2);
        s.set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, fake.mr, 0, 8);
        fake.qp.postSend(s, 1);
        assertNotEquals(MARKER, fake.qp.handle.get(ValueLayout.JAVA_INT, 0));

        fake.qp.handle.set(ValueLayout.JAVA_INT, 0, MARKER);
        ReceiveRequests r = new ReceiveRequests(1, 1);
        r.set(0, 2).sge(0, 0, fake.mr, 0, 64);
        fake.qp.postReceive(r, 1);
        assertNotEquals(MARKER, fake.qp.handle.get(ValueLayout.JAVA_INT, 0));

        fake.cq.handle.set(ValueLayout.JAVA_INT, 0, MARKER);
        WorkCompletions wc = new WorkCompletions(8);
        assertEquals(0, fake.cq.poll(wc), "the fake poll function returns 0: an empty CQ");
        assertEquals(0, wc.count());
        assertNotEquals(MARKER, fake.cq.handle.get(ValueLayout.JAVA_INT, 0));
    }

    @Test
    void requestsBeyondTheQueueLimitsAreRefusedBeforeTheProviderSeesThem() {
        FakeProvider fake = new FakeProvider(1, 1);
        SendRequests s = new SendRequests(2, 2);
        s.set(0, 1, SendOpcode.SEND, 0).sge(0, 0, fake.mr, 0, 8).sge(0, 1, fake.mr, 8, 8);
        assertThrows(IllegalArgumentException.class, () -> fake.qp.postSend(s, 1), "2 SGEs, the QP takes 1");
        assertThrows(IllegalArgumentException.class, () -> fake.qp.postSend(s, 3), "beyond the batch");
    }

    @Test
    void postingAndPollingAllocateNothing() {
        FakeProvider fake = new FakeProvider(1, 1);
        SendRequests s = new SendRequests(1, 1);
        ReceiveRequests r = new ReceiveRequests(1, 1);
        r.set(0, -1).sge(0, 0, fake.mr, 0, 4096);
        WorkCompletions wc = new WorkCompletions(16);
        long[] polled = new long[1];
        AllocationProbe.assertNoSteadyAllocation("10000 rounds of post send, post receive and poll",
                () -> polled[0] += stream(fake, s, r, wc, 10_000));
        assertEquals(0, polled[0]);
    }

    @Test
    void extendedPostingAllocatesNothing() {
        FakeProvider fake = new FakeProvider(1, 1);
        long[] ids = new long[1];
        AllocationProbe.assertNoSteadyAllocation("10000 one-write batches through ibv_wr_*",
                () -> ids[0] += extendedStream(fake, 10_000));
        assertNotEquals(0, ids[0]);
    }

    @Test
    void extendedBatchesReachTheProviderWithTheQpExAsFirstArgument() {
        FakeProvider fake = new FakeProvider(1, 1);
        ExtendedSendQueue sq = fake.extended;
        sq.start();
        sq.wrId(7).flags(SIGNALED).send().sge(fake.mr, 0, 8);
        sq.wrId(8).flags(0).rdmaWrite(0x5678, 0x7f00_0000_0000L).sge(fake.mr, 8, 8);
        sq.wrId(9).compareAndSwap(0x5678, 0x7f00_0000_0000L, 1, 2).sge(fake.mr, 16, 8);
        sq.complete();
        assertThrows(IllegalStateException.class, sq::complete, "no batch open any more");
        assertThrows(IndexOutOfBoundsException.class, () -> {
            sq.start();
            try {
                sq.send().sge(fake.mr, 4090, 8);
            } finally {
                sq.abort();
            }
        });
    }

    /** One RDMA WRITE per batch, as a bandwidth loop on the extended API posts it. */
    static long extendedStream(FakeProvider fake, int n) {
        ExtendedSendQueue sq = fake.extended;
        long last = 0;
        for (int i = 0; i < n; i++) {
            sq.start();
            boolean signaled = (i + 1) % 100 == 0;
            sq.wrId(i + 1).flags(signaled ? SIGNALED : 0).rdmaWrite(0x5678, 0x7f00_0000_0000L)
                    .sge(fake.mr, 0, 2);
            sq.complete();
            if (signaled) {
                fake.complete(i + 1, WcOpcode.RDMA_WRITE);
            }
            last = i + 1;
        }
        return last;
    }

    /**
     * The benchmark's per-message work: fill and post a send, repost a receive, poll; and the completions a
     * real poll would return (one per signaled send, one per receive), which retire the requests.
     */
    private static long stream(FakeProvider fake, SendRequests s, ReceiveRequests r, WorkCompletions wc, int n) {
        long polled = 0;
        for (int i = 0; i < n; i++) {
            boolean signaled = (i + 1) % 100 == 0;
            s.set(0, i, SendOpcode.RDMA_WRITE, signaled ? SIGNALED : 0).sge(0, 0, fake.mr, 0, 2)
                    .rdma(0, 0x7f00_0000_0000L, 0x5678);
            fake.qp.postSend(s, 1);
            fake.qp.postReceive(r, 1);
            polled += fake.cq.poll(wc);
            if (signaled) {
                fake.complete(i, WcOpcode.RDMA_WRITE);
            }
            fake.complete(-1, WcOpcode.RECV);
        }
        return polled;
    }
}
