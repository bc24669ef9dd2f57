package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.ConnectionOptions;

import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;

/**
 * Where an RC connection's completions come from, and how it joins and leaves its completion loop: either
 * a CQ of its own, made through its CM id and registered with the loop, or a seat on a CQ the loop shares
 * among its connections on the device ({@link SharedCq}), whose completions reach the connection's
 * {@link CqInbox}. Either way the connection drains a {@link CompletionSource} into its
 * {@link CqDrain.Sink}: one code path for its completions.
 *
 * <p>Busy-polling connections ({@link ConnectionOptions.CompletionMode#BUSY_POLL}) always have a CQ of
 * their own: spinning on a shared CQ would spin for every connection on it, and its inbox hand-over would
 * add the latency busy polling is there to save.
 *
 * <p>Threads: made on the CM loop; {@link #joined}, {@link #finalDrain} and {@link #left} on the completion
 * loop, under the connection's lock where the connection says so.
 */
public final class CqBinding {
    /** The CQ the QP is made with: its own, or the shared one. */
    public final CompletionQueue cq;
    /** What the connection drains. */
    public final CompletionSource source;
    /** Its place on a shared CQ, or {@code null}. */
    private final SharedCq.Seat seat;
    private final CqInbox inbox;
    private final CompletionLoop loop;

    /**
     * CM loop: makes the connection's own CQ through {@code id}'s context (closed with the id) or reserves
     * {@code entries} on a shared CQ of the loop; a reservation is returned by {@code destroyed}'s task,
     * which the connection's owner runs once the id (and with it the QP) is destroyed.
     *
     * @param device the loops' resources for the id's device, which keep the shared CQs
     * @param entries the send queue depth plus the receives that can complete for the connection
     * @param destroyed takes the task to run after the id was closed
     */
    public CqBinding(CmId id, DeviceResources device, CompletionLoop loop, ConnectionOptions options, int entries,
              CqDrain.Sink sink, java.util.function.Consumer<Runnable> destroyed) {
        this.loop = loop;
        boolean busyPolling = options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL;
        if (options.sharedCompletionQueue() && !busyPolling) {
            seat = device.sharedCqs(loop).join(entries);
            destroyed.accept(seat::leave);
            cq = seat.cq();
            inbox = new CqInbox(sink, entries);
            source = inbox;
        } else {
            RdmaContext ctx = id.context();
            seat = null;
            inbox = null;
            cq = ctx.createCompletionQueue(entries, loop.channel(id.sharedContext()),
                    loop.completionVector(ctx.completionVectorCount()));
            source = new CqDrain(cq, sink, busyPolling ? Math.max(1, options.busyPoll().toNanos()) : 0);
        }
    }

    /** {@return whether the CQ is shared} */
    boolean shared() {
        return seat != null;
    }

    /** {@return the inbox a shared CQ fills, or {@code null}} */
    public CqInbox inbox() {
        return inbox;
    }

    /**
     * CM loop, as soon as the QP exists: on a shared CQ, its completions go to {@code member} from now on
     * (the peer may send before this side handled ESTABLISHED).
     */
    public void created(QueuePair qp, SharedCq.Member member) {
        if (seat != null) {
            seat.register(qp.number(), member);
        }
    }

    /** Completion loop, once established: an own CQ's completions go to {@code handler} from now on. */
    public void joined(CompletionLoop.Handler handler) {
        assert loop.inLoop() : "completion loop only";
        if (seat == null) {
            loop.register(cq, handler);
        }
    }

    /**
     * Completion loop, under the connection's lock, as it leaves: takes what completed. A shared CQ is
     * polled for every connection on it first, so this one's completions are in its inbox.
     */
    public void finalDrain() {
        if (seat != null) {
            seat.pollNow();
        }
        source.finalDrain();
    }

    /**
     * Completion loop, once the connection left: its own CQ is no longer polled; on a shared CQ, what
     * still arrives for its QP is dropped (its number stays registered until the QP is destroyed).
     *
     * @param wasJoined whether {@link #joined} was called
     */
    public void left(boolean wasJoined) {
        if (inbox != null) {
            inbox.close();
        } else if (wasJoined) {
            loop.unregister(cq);
        }
    }
}
