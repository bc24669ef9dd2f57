package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.util.CmLog;

import java.util.Arrays;

import rdmaflux.verbs.QpNumbers;
import rdmaflux.verbs.WorkCompletions;

/**
 * The dispatch of a shared CQ's polled batches ({@link SharedCq}): each completion is copied into the
 * inbox of the connection its {@code qp_num} names ({@link QpNumbers}: no lock, no allocation), and once
 * the batch is dispatched each connection it touched is told once, in the order they were first touched,
 * to drain its inbox. A completion for a number nobody has, or for a connection that left its loop (its
 * inbox closed), is dropped and counted.
 *
 * <p>Threads: the batches come from the completion loop that polls the CQ, which owns every field here;
 * {@link #add} and {@link #remove} may be called from any thread (the CM loop adds).
 */
public final class QpDispatch implements CqDrain.Sink {

    /** A connection on the CQ. */
    interface Member {
        /** {@return where its completions are copied} */
        CqInbox inbox();

        /** Loop: completions were copied into its inbox; it drains them now or has its lock holder do it. */
        void dispatched();
    }

    private final QpNumbers<Member> members = new QpNumbers<>();
    /** The members a batch touched, told once it is dispatched. */
    private Member[] touched = new Member[16];
    private int touchedCount;
    /** Completions for no connection, or for one that left its loop: dropped. */
    private long dropped;
    /** Set from a batch's poll until its members were told. */
    private boolean polling;

    /**
     * The completions of a QP number go to {@code member} from now on, unless the number is registered.
     *
     * @param qpNumber the QP's number
     * @param member its connection
     * @return whether it was added ({@code false}: the number is still registered to another one)
     */
    boolean add(int qpNumber, Member member) {
        return members.add(qpNumber, member);
    }

    /**
     * Unregisters a QP number, if {@code member} has it.
     *
     * @param qpNumber the QP's number
     * @param member the connection it was registered to
     */
    void remove(int qpNumber, Member member) {
        members.remove(qpNumber, member);
    }

    /** {@return completions dropped so far: their number was not registered or their connection had left} */
    long dropped() {
        return dropped;
    }

    /** {@return whether a batch is being dispatched (a poll from inside it would reuse its list)} */
    boolean polling() {
        return polling;
    }

    @Override
    public void polled(int n) {
        polling = true;
    }

    @Override
    public void complete(WorkCompletions wc, int i) {
        Member m = members.get(wc.qpNumber(i));
        if (m == null) {
            dropped++;
            return;
        }
        CqInbox inbox = m.inbox();
        if (!inbox.offer(wc, i)) {
            dropped++;
            return;
        }
        if (!inbox.queued) {
            inbox.queued = true;
            if (touchedCount == touched.length) {
                touched = Arrays.copyOf(touched, touchedCount * 2);
            }
            touched[touchedCount++] = m;
        }
    }

    /** The batch is in the inboxes: each connection it touched drains its own, in the order polled. */
    @Override
    public void handled() {
        try {
            for (int k = 0; k < touchedCount; k++) {
                Member m = touched[k];
                touched[k] = null;
                m.inbox().queued = false;
                try {
                    m.dispatched();
                } catch (RuntimeException e) {
                    // One connection's failure must not keep the others from their completions.
                    CmLog.LOG.log(System.Logger.Level.ERROR, "draining an inbox failed", e);
                }
            }
        } finally {
            touchedCount = 0;
            polling = false; // only now: a poll from inside a dispatch would reuse this batch's list
        }
    }
}
