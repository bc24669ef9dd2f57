package rdmaflux.cm.internal.rc;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;

import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendRequests;

/**
 * The send requests a connection wrote under its lock and has not posted yet, and their posting. The
 * holder seals what it wrote as it lets go of the lock ({@link #seal()}) and posts it with one
 * {@code ibv_post_send} (one doorbell; on Soft-RoCE one system call, in which the kernel also transmits)
 * just after ({@link #postSealed()}), so the lock is not held during the call. Two batches take turns: the
 * next holder writes the other one meanwhile. Batches leave in the order they were sealed. The last request
 * of every batch is signaled as it is sealed, so a request written unsignaled always has a signaled one
 * after it, whose completion ends it too (on an RC queue pair completions come in the order of posting).
 *
 * <p>Threads: written and sealed under the connection's lock ({@link ConnectionLock}); the sealed batch is
 * posted by the thread that sealed it, after letting go; nobody waits for a post.
 */
public final class SendBatches {
    /** The most requests posted with one doorbell. */
    static final int MAX_BATCH = 32;
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);

    /** Told, without the lock, of the requests of a post the device refused. */
    interface Refusal {
        /**
         * @param ops the operations the device did not take, in order
         * @param failure why
         */
        void refused(SendEntry[] ops, RuntimeException failure);
    }

    private final ConnectionLock lock;
    private final QueuePair qp;
    private final IntConsumer outstanding;
    private final Refusal refusal;
    private final SendRequests[] batches = new SendRequests[2];
    private final SendEntry[][] opsOf = new SendEntry[2][];
    /** The batch requests are written into; guarded by the lock. */
    private SendRequests batch;
    /** The operation of each request in {@link #batch}. */
    private SendEntry[] batchOps;
    /** How many requests {@link #batch} holds; guarded by the lock. */
    private int batched;
    /**
     * Whether a sealed batch is being posted: one at a time, so batches leave in the order they were
     * sealed. Set by {@link #seal()} under the lock, cleared by {@link #postSealed()}.
     */
    private final AtomicBoolean posting = new AtomicBoolean();
    /**
     * Set by a holder that found a post in progress and left its requests written: the poster (or, if it
     * finished meanwhile, the next holder) seals them.
     */
    private volatile boolean leftWritten;
    // Written by the thread that set posting, read by it in postSealed: the sealed batch.
    private SendRequests sealed;
    private SendEntry[] sealedOps;
    private int sealedCount;

    /**
     * @param capacity requests per batch (at most {@link #MAX_BATCH} are used)
     * @param outstanding told of the number of work requests each post gave the device
     * @param refusal told of the requests of a refused post
     */
    SendBatches(ConnectionLock lock, QueuePair qp, int capacity, IntConsumer outstanding, Refusal refusal) {
        this.lock = lock;
        this.qp = qp;
        this.outstanding = outstanding;
        this.refusal = refusal;
        int n = Math.min(capacity, MAX_BATCH);
        for (int i = 0; i < 2; i++) {
            batches[i] = new SendRequests(n, 1);
            opsOf[i] = new SendEntry[n];
        }
        batch = batches[0];
        batchOps = opsOf[0];
    }

    /** Guarded by the lock: {@return the batch the next request is written into, at index {@link #size()}} */
    SendRequests requests() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        return batch;
    }

    /** {@return how many requests are written and not sealed; guarded by the lock} */
    int size() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        return batched;
    }

    /**
     * Guarded by the lock: the request at index {@link #size()} of {@link #requests()} was written for
     * {@code op}.
     *
     * @return whether the batch is full now (then the caller posts it: {@link #flushNow()})
     */
    boolean added(SendEntry op) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        batchOps[batched++] = op;
        return batched == batchOps.length;
    }

    /**
     * Guarded by the lock, as its holder lets go: seals the requests written since the last seal for
     * {@link #postSealed()} and switches to the other batch. While an earlier batch is still being posted it
     * leaves them written (the other batch is in use) and says so ({@link #leftWritten}): they leave after
     * it, sealed by its poster or the next holder. Never waits.
     *
     * @return whether there is a batch to post (then the caller must call {@link #postSealed()} once it let
     *         go of the lock)
     */
    boolean seal() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        int n = batched;
        if (n == 0) {
            return false;
        }
        if (!posting.compareAndSet(false, true)) {
            leftWritten = true;
            if (!posting.compareAndSet(false, true)) {
                return false; // the poster finds leftWritten when it is done
            }
        }
        leftWritten = false;
        batch.addFlags(n - 1, SIGNALED); // the batch's end: its completion ends the unsignaled ones before it
        sealed = batch;
        sealedOps = batchOps;
        sealedCount = n;
        batched = 0;
        int next = batch == batches[0] ? 1 : 0;
        batch = batches[next];
        batchOps = opsOf[next];
        return true;
    }

    /**
     * By the thread whose {@link #seal()} returned true, not holding the lock (or holding it, from
     * {@link #flushNow()}): posts the sealed batch as one chain. A post that fails (the QP is closed or in
     * the error state: the queue never writes more than it has room for) hands the requests the device did
     * not take to the {@link Refusal}.
     */
    void postSealed() {
        SendRequests b = sealed;
        SendEntry[] ops = sealedOps;
        int n = sealedCount;
        sealed = null;
        sealedOps = null;
        sealedCount = 0;
        int posted = n;
        RuntimeException failure = null;
        SendEntry[] refused = null;
        try {
            try {
                qp.postSend(b, n);
            } catch (RuntimeException e) {
                failure = e;
                posted = b.lastPosted();
                refused = java.util.Arrays.copyOfRange(ops, posted, n);
            }
            outstanding.accept(posted);
            java.util.Arrays.fill(ops, 0, n, null);
        } finally {
            posting.set(false);
        }
        if (leftWritten && lock.tryLock()) {
            lock.unlock(); // seals and posts what a holder wrote meanwhile (else that holder or the next does)
        }
        if (failure != null) {
            refusal.refused(refused, failure);
        }
    }

    /**
     * Guarded by the lock: posts what was written now, without letting go (a close, a bind, a full batch);
     * after the post in progress, if there is one (it does not need the lock).
     */
    void flushNow() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        while (batched > 0) {
            if (seal()) {
                postSealed();
                return;
            }
            awaitPost();
        }
    }

    /**
     * Lets the thread whose post is in progress finish it: one {@code ibv_post_send}. A method of its own,
     * which BlockHound's integration allows, because BlockHound counts {@link Thread#yield()} as blocking.
     */
    private static void awaitPost() {
        Thread.yield();
    }

    /** {@return whether requests were left written for a post that has ended since; any thread} */
    boolean leftWritten() {
        return leftWritten && !posting.get();
    }
}
