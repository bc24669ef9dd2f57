package rdmaflux.testing;

import java.time.Duration;

import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/** Polling helpers for tests: wait for completions with a deadline instead of spinning forever. */
public final class Completions {
    private Completions() {
    }

    /**
     * Polls until one completion arrives.
     *
     * @param cq the queue
     * @param wc a batch; on return index 0 holds the completion
     * @param timeout the longest wait
     */
    public static void awaitOne(CompletionQueue cq, WorkCompletions wc, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        WorkCompletions one = wc.capacity() == 1 ? wc : null;
        while (System.nanoTime() < deadline) {
            int n = cq.poll(one != null ? one : wc);
            if (n > 1) {
                throw new AssertionError("expected one completion, got " + n);
            }
            if (n == 1) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no completion on " + cq + " within " + timeout);
    }

    /**
     * Polls one successful completion and checks it.
     *
     * @param cq the queue
     * @param timeout the longest wait
     * @return the batch holding it at index 0
     */
    public static WorkCompletions awaitSuccess(CompletionQueue cq, Duration timeout) {
        WorkCompletions wc = new WorkCompletions(1);
        awaitOne(cq, wc, timeout);
        if (wc.status(0) != WcStatus.SUCCESS) {
            throw new AssertionError("completion failed: " + wc.describe(0));
        }
        return wc;
    }
}
