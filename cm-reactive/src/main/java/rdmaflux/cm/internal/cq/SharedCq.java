package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.ConnectionOptions;

import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.Errno;
import rdmaflux.verbs.QpNumbers;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaResourceException;

/**
 * A CQ shared by the RC connections of one completion loop on one device
 * ({@link ConnectionOptions#sharedCompletionQueue()}): the loop polls it, finds each completion's
 * connection by its {@code qp_num} ({@link QpNumbers}), copies the completion into that connection's
 * {@link CqInbox}, and once the batch is dispatched lets each connection it touched drain its inbox (the
 * connection's own protocol: it never waits for the connection's lock). So a loop serving many connections
 * polls a few CQs, and the device and kernel hold a few CQs, not one per connection.
 *
 * <p>Each connection reserves in a CQ what it can have in flight ({@link Group}, {@link CqReservations}),
 * so a shared CQ never overflows. Its {@code qp_num} is registered when its QP is made, before any
 * completion can arrive, and unregistered only after the QP was destroyed and the loop polled the CQ once
 * more ({@link Seat#leave()}).
 *
 * <p>Threads: made and joined on the CM loop; polled, dispatched and closed on its completion loop, which
 * owns every field not marked otherwise. Application threads never poll it: they drain inboxes only.
 */
public final class SharedCq implements CompletionLoop.Handler {

    /** A connection on the CQ. */
    public interface Member extends QpDispatch.Member {
    }

    /**
     * The shared CQs of one completion loop on one device, made as connections need room and closed when
     * their last connection is gone.
     *
     * <p>Threads: {@link #join} on the CM loop; the reservations are returned on the completion loop.
     */
    public static final class Group {
        /** The most entries of one shared CQ when the device allows them. */
        static final int MAX_ENTRIES = 4096;

        private final CompletionLoop loop;
        private final RdmaContext device;
        private final CqReservations<SharedCq> reservations;

        /**
         * No CQ yet.
         *
         * @param loop the loop that polls them
         * @param device the device's shared context ({@link rdmaflux.verbs.CmId#sharedContext()})
         */
        public Group(CompletionLoop loop, RdmaContext device) {
            this.loop = loop;
            this.device = device;
            int maxCqe = device.queryDevice().maxCqe();
            this.reservations = new CqReservations<>(Math.max(1, Math.min(maxCqe, MAX_ENTRIES)));
        }

        /**
         * CM loop: reserves room for a connection in a shared CQ, made if none has room.
         *
         * @param entries its send queue depth plus the receives that can complete for it
         * @return its place; {@link Seat#leave()} returns it
         */
        Seat join(int entries) {
            SharedCq cq = reservations.reserve(entries, capacity -> new SharedCq(this, capacity));
            return new Seat(cq, entries);
        }

        /** {@return how many CQs the group has now} */
        int size() {
            return reservations.size();
        }
    }

    /**
     * A connection's place in a shared CQ: its reservation and its {@code qp_num}.
     *
     * <p>Threads: made and {@link #register registered} on the CM loop; {@link #pollNow} on the completion
     * loop; {@link #leave} on any thread (it hops to the completion loop).
     */
    static final class Seat {
        private final SharedCq shared;
        private final int entries;
        /** Written on the CM loop before the QP can complete anything, read on the completion loop after. */
        private volatile Member member;
        private volatile int qpNumber;
        private boolean left;

        Seat(SharedCq shared, int entries) {
            this.shared = shared;
            this.entries = entries;
        }

        /** {@return the CQ to create the QP with} */
        CompletionQueue cq() {
            return shared.cq;
        }

        /**
         * CM loop, as soon as the QP exists (before connect or accept, so before the peer can send): the
         * completions of {@code qpNumber} go to {@code member} from now on.
         *
         * @throws RdmaResourceException (EBUSY) when the number is still registered for a destroyed queue
         *         pair whose last completions the loop has not polled yet: the device reused it at once
         */
        void register(int qpNumber, Member member) {
            if (!shared.dispatch.add(qpNumber, member)) {
                throw new RdmaResourceException("rdma_create_qp", Errno.EBUSY, "QP number " + qpNumber
                        + " is still registered on its shared CQ for a destroyed queue pair; retry the connection");
            }
            this.qpNumber = qpNumber;
            this.member = member;
        }

        /** Loop: polls the shared CQ now, dispatching to every connection on it (a final drain). */
        void pollNow() {
            shared.pollNow();
        }

        /**
         * Once the connection's QP was destroyed (or never made): on the completion loop, polls the CQ once
         * more, then unregisters the {@code qp_num} and returns the reservation; the CQ is closed with its
         * last reservation. Idempotent.
         *
         * <p>Why only now: until the QP is destroyed its completions (flushes) keep coming, and completions
         * polled for its number must not go to another connection. The device may give the number of a
         * destroyed QP to the next QP it makes, maybe on this CQ: a completion of the old QP still in the
         * CQ would then look like the new one's. So the number stays registered to the torn-down connection
         * (whose inbox drops what arrives) until the loop polled the CQ after the destroy, which empties the
         * CQ of the old QP's completions; a new QP that gets the number before that fails to register.
         */
        void leave() {
            shared.loop.execute(() -> {
                if (left) {
                    return;
                }
                left = true;
                shared.pollNow();
                Member m = member;
                if (m != null) {
                    shared.dispatch.remove(qpNumber, m);
                }
                shared.release(entries);
            });
        }
    }

    private final Group group;
    private final CompletionLoop loop;
    final CompletionQueue cq;
    private final CqDrain drain;
    /** Who gets each completion. */
    private final QpDispatch dispatch = new QpDispatch();

    /** CM loop: makes the CQ on the loop's channel for the device; the loop polls it from its next turn. */
    private SharedCq(Group group, int capacity) {
        this.group = group;
        this.loop = group.loop;
        RdmaContext device = group.device;
        this.cq = device.createCompletionQueue(capacity, loop.channel(device),
                loop.completionVector(device.completionVectorCount()));
        this.drain = new CqDrain(cq, dispatch, 0);
        loop.execute(() -> loop.register(cq, this));
    }

    private void pollNow() {
        if (!dispatch.polling()) {
            drain.drain();
        }
    }

    private void release(int entries) {
        if (group.reservations.release(this, entries)) {
            // Its last connection is gone (its QP destroyed and polled for): no QP uses the CQ any more.
            loop.unregister(cq);
            cq.close();
            long dropped = dispatch.dropped();
            if (dropped > 0) {
                CmLog.LOG.log(System.Logger.Level.DEBUG, () -> "closed " + cq + ": dropped " + dropped
                        + " completions of connections that had left it");
            }
        }
    }

    // ---------------------------------------------------------------- CompletionLoop.Handler

    @Override
    public boolean drain() {
        if (dispatch.polling()) {
            return false;
        }
        return drain.drain();
    }

    @Override
    public boolean busy() {
        return false;
    }
}
