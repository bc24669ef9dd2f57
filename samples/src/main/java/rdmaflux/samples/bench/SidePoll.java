package rdmaflux.samples.bench;

import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import rdmaflux.verbs.WorkCompletions;

/**
 * Completion bookkeeping of one side of a {@link VerbsTests} pair: polls its CQ, reposts each receive as it
 * completes and counts send completions against the sends its loop posted. Nothing here allocates.
 *
 * <p>Threads: the side's own thread (the client side's is the caller of {@link VerbsTests}, the server
 * side's the thread {@code VerbsTests} starts for it), one at a time.
 */
final class SidePoll {
    final VerbsLink.Side side;
    private final VerbsTests tests;
    private final long waitNanos;
    /** Signaled sends posted and not yet completed; the loops count their posts here. */
    int sends;
    /** Receives that completed in an earlier poll batch and were not yet handed out. */
    private int received;

    SidePoll(VerbsTests tests, VerbsLink.Side side, long waitNanos) {
        this.tests = tests;
        this.side = side;
        this.waitNanos = waitNanos;
    }

    /**
     * Returns once one more receive has completed (reposting each as it is polled, counting send
     * completions on the way). One poll may return several receives; the extra ones are kept for the
     * next calls.
     */
    void awaitReceive() {
        if (received > 0) {
            received--;
            return;
        }
        long deadline = System.nanoTime() + waitNanos;
        for (;;) {
            int n = side.cq.poll(side.wc);
            for (int i = 0; i < n; i++) {
                check(side.wc, i);
                if (side.wc.wrId(i) == VerbsLink.RECV_ID) {
                    side.repostReceive();
                    received++;
                } else {
                    sends--;
                }
            }
            if (received > 0) {
                received--;
                return;
            }
            if (n == 0) {
                if (tests.spinHint) {
                    Thread.onSpinWait();
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no receive completion within the wait");
                }
            }
        }
    }

    /** Spins until the byte at {@code offset} of this side's buffer holds {@code v}, reaping sends meanwhile. */
    void awaitByte(long offset, byte v) {
        long deadline = System.nanoTime() + waitNanos;
        for (;;) {
            VarHandle.acquireFence(); // the device writes this memory behind the JIT's back
            if (side.buf.get(ValueLayout.JAVA_BYTE, offset) == v) {
                return;
            }
            if (reap() == 0 && tests.spinHint) {
                Thread.onSpinWait();
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the peer's RDMA write did not arrive within the wait");
            }
        }
    }

    int reap() {
        int n = side.cq.poll(side.wc);
        for (int i = 0; i < n; i++) {
            check(side.wc, i);
            if (side.wc.wrId(i) == VerbsLink.RECV_ID) {
                throw new IllegalStateException("unexpected receive completion");
            }
            sends--;
        }
        return n;
    }

    /** Waits until every signaled send of this side has completed. */
    void drainSends() {
        long deadline = System.nanoTime() + waitNanos;
        while (sends > 0) {
            reap();
            if (sends > 0 && System.nanoTime() > deadline) {
                throw new IllegalStateException("send completions missing after the wait");
            }
        }
    }

    /** Throws, naming the status, when completion {@code i} failed. */
    static void check(WorkCompletions wc, int i) {
        if (!wc.isSuccess(i)) {
            throw new IllegalStateException("work request failed: " + wc.describe(i));
        }
    }
}
