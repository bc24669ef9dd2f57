package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.rc.ConnectionLock;

import rdmaflux.verbs.WorkCompletions;

/**
 * One connection's completions taken from a shared CQ ({@link SharedCq}), in the order they were polled,
 * until the connection handles them: the completion loop copies each one in ({@link #offer}), and the
 * thread that drains the connection (under its {@link ConnectionLock}) takes them all at once and hands
 * them to the connection's {@link CqDrain.Sink}, as a poll of its own CQ would.
 *
 * <p>Two batches: the loop fills one while the drainer handles the other; a drain swaps them under the
 * monitor, so the loop never waits for a handler (only for a swap or the copy of one {@code ibv_wc}). The batches are
 * sized for what the connection can have in flight; if one fills all the same (the drainer lagging), it
 * grows, rarely and never per message, rather than lose a completion.
 *
 * <p>Threads: {@link #offer} and {@link #close} on the completion loop; {@link #drain} by the connection's
 * lock holder. The filling batch and its count are guarded by the monitor; the handled batch belongs to
 * the drainer.
 */
public final class CqInbox implements CompletionSource {
    private final CqDrain.Sink sink;
    /** Guarded by this: the batch the loop fills, and how many it holds. */
    private WorkCompletions filling;
    private int filled;
    private boolean closed;
    /** The drainer's: the batch being handled. */
    private WorkCompletions handling;
    /** The drainer's: set while it hands a batch over, so a nested drain cannot swap that batch away. */
    private boolean draining;
    /** Loop thread only: whether the shared CQ has this inbox on its list of inboxes to drain after a poll. */
    boolean queued;

    /**
     * An empty inbox.
     *
     * @param sink the connection
     * @param capacity what the connection can have in flight
     */
    CqInbox(CqDrain.Sink sink, int capacity) {
        this.sink = sink;
        this.filling = new WorkCompletions(capacity);
        this.handling = new WorkCompletions(capacity);
    }

    /**
     * Loop: copies a completion in.
     *
     * @param wc the shared CQ's batch
     * @param i the completion's index
     * @return whether it was taken ({@code false}: the connection left its loop; the completion is dropped)
     */
    synchronized boolean offer(WorkCompletions wc, int i) {
        if (closed) {
            return false;
        }
        if (filled == filling.capacity()) {
            WorkCompletions bigger = new WorkCompletions(filled * 2);
            for (int k = 0; k < filled; k++) {
                filling.copy(k, bigger, k);
            }
            filling = bigger;
        }
        wc.copy(i, filling, filled++);
        return true;
    }

    /** Loop, as the connection leaves it: what arrives from now on is dropped. */
    synchronized void close() {
        closed = true;
        filled = 0;
        filling.clear();
    }

    /** {@return whether completions wait; any thread} */
    synchronized boolean pending() {
        return filled > 0;
    }

    /** {@return the capacity of the batch being filled (tests: it grows only when it must)} */
    synchronized int capacity() {
        return filling.capacity();
    }

    @Override
    public void start() {
        drain();
    }

    @Override
    public boolean drain() {
        if (draining) {
            return false; // the outer drain takes what arrived meanwhile on its next round
        }
        draining = true;
        try {
            return drainAll();
        } finally {
            draining = false;
        }
    }

    private boolean drainAll() {
        boolean found = false;
        for (;;) {
            WorkCompletions batch;
            int n;
            synchronized (this) {
                n = filled;
                if (n == 0) {
                    return found;
                }
                batch = filling;
                filling = handling;
                filling.clear();
                filled = 0;
                handling = batch;
            }
            found = true;
            sink.polled(n);
            try {
                for (int i = 0; i < n; i++) {
                    sink.complete(batch, i);
                }
            } finally {
                sink.handled();
            }
        }
    }

    @Override
    public boolean busy() {
        return false; // the shared CQ is event-driven: busy-polling connections keep their own CQ
    }

    @Override
    public void touch() {
    }

    @Override
    public void finalDrain() {
        try {
            drain();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.DEBUG, "final drain of an inbox failed", e);
        }
    }
}
