package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.Step;

import java.util.function.IntConsumer;

import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * What each work completion of an RC connection means: a receive goes to its {@link Inbound} (or fails
 * the connection), a send to its {@link SendQueue}; a failed one becomes the typed failure the connection
 * ends with (a flush reports why the queue pair was flushed, not the flush).
 *
 * <p>Threads: whoever drains the connection's completions, under its {@link ConnectionLock}.
 */
public final class RcCompletions {
    private final QueueOwner owner;
    private final RdmaRecorder recorder;
    private final Keepalive keepalive;
    private final Receives receives;
    private final SendQueue sends;
    private final ControlMessages control;
    private final IntConsumer outstanding;
    private final Inbound inbound;
    /** A work completion error this queue failed the connection with, or null. */
    private Throwable localFailure;

    RcCompletions(QueueOwner owner, RdmaRecorder recorder, Keepalive keepalive, Receives receives,
                  SendQueue sends, ControlMessages control, Inbound inbound, IntConsumer outstanding) {
        this.owner = owner;
        this.recorder = recorder;
        this.keepalive = keepalive;
        this.receives = receives;
        this.sends = sends;
        this.control = control;
        this.inbound = inbound;
        this.outstanding = outstanding;
    }

    /**
     * Under the connection's lock: one completion, from its own CQ or its inbox.
     *
     * @param wc the batch
     * @param i its index
     */
    void complete(WorkCompletions wc, int i) {
        keepalive.touch();
        long wrId = wc.wrId(i);
        boolean ok = wc.isSuccess(i);
        if (Receives.isReceive(wrId)) {
            ReceiveSlot slot = receives.slot(wrId);
            if (!ok) {
                receives.failed(slot);
                // A receive flushed by a close or a failure already seen fails nothing more: no exception
                // is made for it (a teardown flushes every posted receive).
                if (!(wc.status(i) == WcStatus.WR_FLUSH_ERR && endSeen())) {
                    completionError(wc, i);
                }
                return;
            }
            RdmaCmException.ProtocolViolation violation = inbound.receive(slot, wc, i);
            if (violation != null) {
                localFailure = violation;
                owner.transferFailed(violation);
            }
            return;
        }
        outstanding.accept(-1);
        if (!ok) {
            sends.failed((int) wrId, completionError(wc, i));
            return;
        }
        int index = (int) wrId;
        control.completed(sends.kind(index));
        sends.completed(index);
        control.maybeReturnCredits(); // after what waited was posted: it may carry the credits
    }

    /** {@return whether a failure or a close explains a flush} */
    private boolean endSeen() {
        return owner.failure() != null || localFailure != null || sends.closedForSends();
    }

    private Throwable completionError(WorkCompletions wc, int i) {
        WcStatus status = wc.status(i);
        if (status == WcStatus.WR_FLUSH_ERR) {
            // Flushes follow a failure or a disconnect; report that, not the flush.
            Throwable f = owner.failure();
            if (f == null) {
                f = localFailure;
            }
            if (f != null) {
                return f;
            }
            if (sends.closedForSends()) {
                return new RdmaCmException.Disconnected(Step.TRANSFER, "connection closed");
            }
            // Neither a failure seen here nor a close: the queue pair went to the error state on its own,
            // as a responder does when the peer's RDMA READ, WRITE or atomic is refused (a stale or forged
            // key: the peer gets REM_ACCESS_ERR). Nothing can be sent or received any more: fail now.
        }
        recorder.completionError(status);
        RdmaCmException.CompletionError e = new RdmaCmException.CompletionError(status,
                status == WcStatus.WR_FLUSH_ERR ? "the queue pair went to the error state without a local failure "
                        + "(the peer's remote operation was refused?): " + wc.describe(i)
                        : "work completion failed: " + wc.describe(i));
        localFailure = e;
        owner.transferFailed(e);
        return e;
    }
}
