package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.cq.DeviceResources;
import rdmaflux.cm.internal.cq.Devices;
import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaMulticastException;
import rdmaflux.cm.internal.loop.SharedLoops;
import rdmaflux.cm.internal.memory.Registrations;
import rdmaflux.cm.internal.loop.Timers;
import rdmaflux.cm.Step;

import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.RdmaException;
import rdmaflux.verbs.UdParameters;

/**
 * One multicast join on the connection manager, as mckey.c does it: a UDP-port-space id, address
 * resolution with the local RDMA address as source and the group as destination, a UD QP made with
 * {@code rdma_create_qp}, receives posted before the join, {@code rdma_join_multicast_ex}, then
 * MULTICAST_JOIN with the group's address handle attributes, QPN (0xFFFFFF) and qkey.
 *
 * <p>The data path is the {@link UdQueue}, created at ADDR_RESOLVED. A receiving join keeps a receive ring
 * and no send buffers; a sending one the reverse, and joins as a send-only full member when asked (falling
 * back to a full join when the kernel refuses). The join timeout is a timer of the CM loop itself, as a
 * connection's step timers are: it fires on the thread that owns the id, with no hop from another
 * scheduler, and is cancelled once the group is joined or the join ends.
 *
 * <p>Threads: the CM loop, for everything but the getters, which the owner's facade reads from any thread
 * (the fields they read are volatile and set once before {@link Listener#joined()}).
 */
public final class GroupJoin {
    /** What the owner hears, on the CM loop. */
    interface Listener {
        /** MULTICAST_JOIN arrived; {@link #queue()} and {@link #parameters()} are ready. */
        void joined();

        /** The join failed, or the joined group failed; everything is being released. */
        void failed(Throwable cause);
    }

    private enum State { IDLE, RESOLVING, JOINING, JOINED, CLOSED }

    private final InetAddress group;
    private final MulticastOptions options;
    private final boolean receiver;
    private final CmEventLoop cm;
    /** The CM loop's timers: the join timeout. */
    private final Timers timers;
    private final CompletionLoop completions;
    /** The loops whose protection domain the queue uses. */
    private final Loops loops;
    private final Listener listener;
    private final Sinks.Empty<Void> closed = Sinks.empty();

    private State state = State.IDLE;
    private CmId id;
    private volatile UdQueue queue;
    /** The loops' resources on the device, held from the queue's making until the id is destroyed; CM loop. */
    private DeviceResources device;
    private volatile boolean sendOnly;
    private volatile String sendOnlyRefusal;
    private volatile UdParameters parameters;
    private Disposable timer;
    private long deadline;

    GroupJoin(InetAddress group, MulticastOptions options, boolean receiver, SharedLoops loops, Listener listener) {
        this.group = group;
        this.options = options;
        this.receiver = receiver;
        this.cm = loops.cm();
        this.timers = cm;
        this.completions = loops.completions();
        this.loops = loops.loops();
        this.listener = listener;
    }

    InetAddress group() {
        return group;
    }

    MulticastOptions options() {
        return options;
    }

    /** {@return the data path; set from ADDR_RESOLVED on} */
    UdQueue queue() {
        return queue;
    }

    /** {@return the MULTICAST_JOIN event's datagram parameters (AH attributes, QPN 0xFFFFFF, qkey)} */
    UdParameters parameters() {
        return parameters;
    }

    /** {@return whether the join in effect is send-only} */
    boolean sendOnly() {
        return sendOnly;
    }

    /** {@return why the kernel refused a send-only join, or {@code null}} */
    String sendOnlyRefusal() {
        return sendOnlyRefusal;
    }

    /** {@return completes when the id is destroyed and the buffers are freed} */
    Mono<Void> onClosed() {
        return closed.asMono();
    }

    /** CM loop: creates the id and starts address resolution. */
    void start() {
        assert cm.inLoop() : "CM loop only";
        if (state != State.IDLE) {
            return;
        }
        long timeout = options.joinTimeout().toNanos();
        deadline = System.nanoTime() + timeout;
        timer = timers.schedule(this::checkTimeout, timeout);
        try {
            id = cm.channel().createId(PortSpace.UDP);
            cm.register(id, this::onEvent);
            state = State.RESOLVING;
            InetAddress local = options.localAddress();
            id.resolveAddress(local == null ? null : new InetSocketAddress(local, 0), new InetSocketAddress(group, 0),
                    options.addressTimeout());
        } catch (RuntimeException e) {
            fail(e);
        }
    }

    private void onEvent(CmEvent e) {
        assert cm.inLoop() : "CM loop only";
        try {
            switch (e.type()) {
                case ADDR_RESOLVED -> {
                    if (state == State.RESOLVING && !late()) {
                        addressResolved();
                    }
                }
                case MULTICAST_JOIN -> {
                    if (state == State.JOINING && !late()) {
                        joined(e);
                    }
                }
                case MULTICAST_ERROR -> multicastError(e);
                case ADDR_ERROR -> fail(RdmaCmException.of(Step.ADDRESS, e.type(), e.status(), null));
                case DEVICE_REMOVAL -> fail(RdmaCmException.of(state == State.JOINED ? Step.TRANSFER : Step.ADDRESS,
                        e.type(), e.status(), null));
                case ADDR_CHANGE -> CmLog.LOG.log(Level.WARNING, "address change while joined to "
                        + group.getHostAddress() + "; the join stays on the device it was made on");
                default -> CmLog.LOG.log(Level.DEBUG, "ignoring " + e + " for group " + group.getHostAddress());
            }
        } catch (RuntimeException ex) {
            fail(ex);
        }
    }

    /** An event after the deadline counts as a timeout, so a join never completes late. */
    private boolean late() {
        if (System.nanoTime() - deadline >= 0) {
            checkTimeout();
            return true;
        }
        return false;
    }

    private void addressResolved() {
        device = Devices.of(loops).device(id).hold();
        Registrations domain = device.domain();
        queue = new UdQueue(id.context(), id.sharedContext(), domain, id.portNumber(),
                id::createQueuePair,
                receiver ? options.receiveBuffers() : 0, receiver ? 0 : options.sendBuffers(), options.scheduler(),
                completions, options.recorder());
        // Receives go up before the join, so nothing that arrives right after MULTICAST_JOIN is dropped.
        queue.postInitialReceives();
        state = State.JOINING;
        sendOnly = !receiver && options.sendOnly();
        if (sendOnly) {
            try {
                id.joinMulticast(group, true);
                return;
            } catch (RdmaException ex) {
                refuseSendOnly(ex.getMessage());
            }
        }
        id.joinMulticast(group, false);
    }

    private void refuseSendOnly(String why) {
        sendOnlyRefusal = why;
        sendOnly = false;
        CmLog.LOG.log(Level.INFO, "send-only join to " + group.getHostAddress() + " refused (" + why
                + "); joining as a full member");
    }

    private void multicastError(CmEvent e) {
        if (state == State.JOINING && sendOnly) {
            // The kernel took the send-only request but could not make it: retry as a full member.
            refuseSendOnly("MULTICAST_ERROR, status " + e.status());
            try {
                id.leaveMulticast(group);
            } catch (RuntimeException ex) {
                CmLog.LOG.log(Level.DEBUG, "leaving the refused send-only join failed", ex);
            }
            id.joinMulticast(group, false);
            return;
        }
        if (state == State.JOINING || state == State.JOINED) {
            fail(new RdmaMulticastException.JoinError(group, e.status(), state == State.JOINED));
        }
    }

    private void joined(CmEvent e) {
        parameters = e.datagram();
        if (parameters == null || parameters.addressHandle() == null) {
            fail(new RdmaMulticastException.JoinError(group, e.status(), false));
            return;
        }
        state = State.JOINED;
        options.recorder().multicastGroups(1);
        cancelTimer();
        queue.start();
        listener.joined();
    }

    /** CM loop: the join timeout's timer fired, or an event came after the deadline. */
    private void checkTimeout() {
        assert cm.inLoop() : "CM loop only";
        if (state == State.IDLE || state == State.RESOLVING || state == State.JOINING) {
            fail(new RdmaMulticastException.JoinTimeout(group, options.joinTimeout()));
        }
    }

    /** CM loop: leaves the group and frees everything; idempotent. */
    void leave() {
        close(null);
    }

    /** CM loop: fails the join (the listener hears it) and frees everything. */
    void fail(Throwable cause) {
        close(cause);
    }

    private void close(Throwable cause) {
        assert cm.inLoop() : "CM loop only";
        if (state == State.CLOSED) {
            return;
        }
        State was = state;
        state = State.CLOSED;
        if (was == State.JOINED) {
            options.recorder().multicastGroups(-1);
        }
        cancelTimer();
        if (was == State.JOINING || was == State.JOINED) {
            try {
                id.leaveMulticast(group);
            } catch (RuntimeException ex) {
                // After MULTICAST_ERROR the kernel may have dropped the join already; destroying the id cleans up.
                CmLog.LOG.log(Level.DEBUG, "rdma_leave_multicast " + group.getHostAddress() + " failed", ex);
            }
        }
        if (cause != null) {
            try {
                listener.failed(cause);
            } catch (RuntimeException ex) {
                CmLog.LOG.log(Level.ERROR, "multicast failure listener failed", ex);
            }
        }
        if (id != null) {
            cm.unregister(id);
        }
        if (queue != null) {
            queue.shutdown(cause, () -> cm.execute(this::release));
        } else {
            release();
        }
    }

    /** CM loop: the join step ended, one way or the other; its timer must not fire for it. */
    private void cancelTimer() {
        if (timer != null) {
            timer.dispose();
            timer = null;
        }
    }

    /** CM loop, after the completion loop let go: closes the queue's QP, MRs and AHs, destroys the id (CQ with it). */
    private void release() {
        assert cm.inLoop() : "CM loop only";
        UdQueue.release(id, queue);
        if (device != null) {
            device.release();
            device = null;
        }
        closed.tryEmitEmpty();
    }
}
