package rdmaflux.verbs;

/**
 * What a {@link QueuePair}'s polls and its close do with its {@link WorkRing}s: which queue a completion
 * belongs to, and giving every lease back once the QP is gone.
 */
final class WorkQueues {
    // enum ibv_wc_opcode
    private static final int IBV_WC_RECV = 1 << 7;
    private static final int IBV_WC_RECV_RDMA_WITH_IMM = IBV_WC_RECV + 1;

    private final WorkRing send;
    /** Null with an SRQ, which keeps its own. */
    private final WorkRing receive;
    private final CompletionQueue sendCq;
    private final CompletionQueue receiveCq;
    private final SharedReceiveQueue srq;

    WorkQueues(WorkRing send, WorkRing receive, CompletionQueue sendCq, CompletionQueue receiveCq,
               SharedReceiveQueue srq) {
        this.send = send;
        this.receive = receive;
        this.sendCq = sendCq;
        this.receiveCq = receiveCq;
        this.srq = srq;
    }

    /**
     * Retires the work requests a polled completion ended; called by a poll of {@code cq}, under its
     * {@link CompletionQueue#pollLock}.
     *
     * <p>Which queue: with separate send and receive CQs, the CQ says. On a CQ both use, a successful
     * completion's opcode says ({@code IBV_WC_RECV} and {@code IBV_WC_RECV_RDMA_WITH_IMM} are receives,
     * below {@code IBV_WC_RECV} sends); a failed one's opcode is undefined (rxe reports a flushed receive
     * as {@code IBV_WC_SEND}), so its {@code wr_id} decides when only one queue has a request with it. When
     * both have (the caller uses one id space for both) nothing is retired: the requests are retired by the
     * next completions of their queues, or when the QP is destroyed. Late, never early.
     */
    void retire(CompletionQueue cq, long wrId, int status, int opcode) {
        if (sendCq != receiveCq) {
            if (cq == sendCq) {
                send.retireThrough(wrId);
            } else {
                retireReceive(wrId);
            }
            return;
        }
        if (status == 0) {
            if (opcode == IBV_WC_RECV || opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
                retireReceive(wrId);
                return;
            }
            if (opcode >= 0 && opcode < IBV_WC_RECV) {
                send.retireThrough(wrId);
                return;
            }
        }
        boolean inSend = send.contains(wrId);
        boolean inReceive = srq != null ? srq.contains(wrId) : receive.contains(wrId);
        if (inSend && !inReceive) {
            send.retireThrough(wrId);
        } else if (inReceive && !inSend) {
            retireReceive(wrId);
        }
    }

    private void retireReceive(long wrId) {
        if (srq != null) {
            srq.retire(wrId);
        } else {
            receive.retireThrough(wrId);
        }
    }

    /**
     * Ends every recorded request, giving its leases back: the QP was destroyed or reset, so none of them
     * runs any more. Holds the CQs' poll locks, so no poll retires from the rings meanwhile.
     */
    void retireAll() {
        underPollLocks(() -> {
            send.retireAll();
            if (receive != null) {
                receive.retireAll();
            }
        });
    }

    /**
     * Before a QP's children close: lets go of the memory windows outstanding binds hold, so that the windows
     * (children of a QP they were bound through) are deallocated before the QP is destroyed, as rxe needs; and
     * leaves the CQs' tables, so that no completion can reach a QP whose number the kernel may reuse.
     */
    void beforeClose(QueuePair qp) {
        underPollLocks(() -> {
            send.releaseAll(MemoryWindow.class);
            sendCq.queuePairs.remove(qp.number(), qp);
            receiveCq.queuePairs.remove(qp.number(), qp);
        });
    }

    /** Runs {@code action} holding both CQs' poll locks, taken in the CQs' creation order (no deadlock). */
    private void underPollLocks(Runnable action) {
        CompletionQueue first = sendCq.order <= receiveCq.order ? sendCq : receiveCq;
        CompletionQueue second = first == sendCq ? receiveCq : sendCq;
        first.pollLock.lock(first);
        try {
            if (second != first) {
                second.pollLock.lock(second);
            }
            try {
                action.run();
            } finally {
                if (second != first) {
                    second.pollLock.unlock();
                }
            }
        } finally {
            first.pollLock.unlock();
        }
    }
}
