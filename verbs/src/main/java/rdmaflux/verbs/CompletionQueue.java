package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;

import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.ibv_cq;

/**
 * A completion queue ({@code struct ibv_cq}).
 *
 * <p>{@link #poll(WorkCompletions)} and {@link #requestNotification(boolean)} are the inline
 * {@code ibv_poll_cq}/{@code ibv_req_notify_cq} of verbs.h, called through the provider's function
 * pointers exactly as the header does; they allocate nothing. A poll also gives back what the completed
 * work requests held (see {@link QueuePair}): it finds each completion's QP by number among the QPs
 * created on this CQ.
 */
public final class CompletionQueue extends NativeResource {
    private final RdmaContext context;
    private final CompletionChannel channel;
    private final int capacity;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;
    /** This CQ's index among its channel's CQs, or -1 without a channel. */
    private final int slot;
    private static final java.util.concurrent.atomic.AtomicLong CREATED = new java.util.concurrent.atomic.AtomicLong();

    /** Creation order: whoever holds two CQs' poll locks takes the older one's first. */
    final long order = CREATED.incrementAndGet();
    /** The QPs whose send or receive completions come here. */
    final QpNumbers<QueuePair> queuePairs = new QpNumbers<>();
    /**
     * Held while a poll reads completions and retires their work requests, so that they are retired in
     * the CQ's order even when several threads poll; also by whoever changes a ring this CQ retires from.
     */
    final QueueLock pollLock = new QueueLock();

    CompletionQueue(RdmaContext context, CompletionChannel channel, MemorySegment cq, int slot) {
        // The channel owns the CQ too: destroying a channel a CQ still uses fails (EBUSY) in the kernel.
        super(Rank.CQ, cq.reinterpret(ibv_cq.sizeof()),
                channel == null ? new NativeResource[] {context} : new NativeResource[] {context, channel});
        this.context = context;
        this.channel = channel;
        this.slot = slot;
        this.capacity = ibv_cq.cqe(handle);
        MemorySegment ops = ibv_context.ops(context.handle);
        this.pollFn = ibv_context_ops.poll_cq(ops);
        this.notifyFn = ibv_context_ops.req_notify_cq(ops);
    }

    /** {@return the device context} */
    public RdmaContext context() {
        return context;
    }

    /** {@return the completion channel, or {@code null} for a polled-only CQ} */
    public CompletionChannel channel() {
        return channel;
    }

    /** {@return the number of entries the device gave this CQ (at least what was asked)} */
    public int capacity() {
        return capacity;
    }

    /**
     * Polls up to {@code completions.capacity()} completions into the batch.
     *
     * @param completions the reusable batch, overwritten from index 0
     * @return how many completions were read, 0 when the CQ is empty
     */
    public int poll(WorkCompletions completions) {
        MemorySegment cq = acquire();
        pollLock.lock(this);
        try {
            int n = ProviderCalls.pollCq(pollFn, cq.address(), completions.capacity(),
                    completions.segment().address());
            if (n < 0) {
                throw new RdmaException("ibv_poll_cq", 0, "returned " + n + " (CQ overrun or device error)");
            }
            completions.setCount(n);
            retire(completions, n);
            return n;
        } finally {
            pollLock.unlock();
            release();
            // The call got the array's raw address: keep its auto arena alive until the call returned.
            Reference.reachabilityFence(completions);
        }
    }

    /**
     * Takes completions as if a poll had returned them, for tests and benchmarks on a fake provider whose
     * poll function returns nothing: the first {@code n} entries of the batch, written by the caller.
     */
    void deliver(WorkCompletions completions, int n) {
        pollLock.lock(this);
        try {
            completions.setCount(n);
            retire(completions, n);
        } finally {
            pollLock.unlock();
        }
    }

    /** Gives back what the polled completions' work requests held; under {@link #pollLock}. */
    private void retire(WorkCompletions completions, int n) {
        QpNumbers<QueuePair> qps = queuePairs;
        for (int i = 0; i < n; i++) {
            QueuePair qp = qps.get(completions.qpNumberAt(i));
            if (qp != null) {
                qp.retire(this, completions.wrIdAt(i), completions.statusAt(i), completions.opcodeAt(i));
            }
        }
    }

    /**
     * Arms the CQ: the next completion (or the next solicited one) makes its channel readable.
     * After a notification, poll the CQ empty, re-arm, then poll once more to catch completions that
     * arrived in between.
     *
     * @param solicitedOnly notify only for solicited receives and error completions
     */
    public void requestNotification(boolean solicitedOnly) {
        if (channel == null) {
            throw new IllegalStateException(this + " has no completion channel to notify");
        }
        MemorySegment cq = acquire();
        try {
            int rc = ProviderCalls.reqNotifyCq(notifyFn, cq, solicitedOnly ? 1 : 0);
            if (rc != 0) {
                throw RdmaException.of("ibv_req_notify_cq", rc, null);
            }
        } finally {
            release();
        }
    }

    @Override
    void destroy() {
        Calls.IBV_DESTROY_CQ.callStatus(handle);
        // After the destroy: the kernel has dropped this CQ's pending events, so none can name the slot.
        if (channel != null) {
            channel.free(slot);
        }
    }

    @Override
    public String toString() {
        return "CompletionQueue[" + context.deviceName() + ", capacity=" + capacity + "]";
    }
}
