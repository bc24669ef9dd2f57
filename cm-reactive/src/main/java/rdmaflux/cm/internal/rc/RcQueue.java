package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.cq.CompletionSource;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.internal.cq.CqBinding;
import rdmaflux.cm.internal.cq.DeviceResources;
import rdmaflux.cm.internal.cq.CqDrain;
import rdmaflux.cm.internal.cq.CqInbox;
import rdmaflux.cm.internal.memory.ConnectionLeases;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.internal.memory.Registrations;
import rdmaflux.cm.internal.cq.SharedCq;
import rdmaflux.cm.Step;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.WorkCompletions;

/**
 * The data path of one RC connection: its native objects, its CQ (drained by a {@link CqDrain} on the
 * completion loop) and the dispatch of each completion, the {@link CreditWindow}, and teardown. The send
 * side (operations, send buffers, posting) is its {@link SendQueue}; the receive buffers, lent to the
 * application and reposted, are its {@link Receives}; what a receive means is its {@link Inbound}.
 *
 * <p>Threads: created on the CM loop (an own CQ is made through the CM id's context and the QP through the
 * id, so closing the id frees them; a shared CQ's reservation is returned after that, {@link CqBinding}; the regions are made in the loops' protection domain for the device, which
 * outlives the connection, so {@link #afterDestroy()} closes them); application threads post sends and
 * release messages. Everything else is guarded by the connection's {@link ConnectionLock}: the send side,
 * the receive re-posting, the credit window, and the {@link CqDrain} with the dispatch of completions and
 * the inbound sink's emission. The completion loop drains the CQ (or, on a shared CQ, the connection's
 * inbox) when it is notified, unless another thread holds the lock: then that thread drains it before
 * letting go, so the loop never waits for it.
 */
public final class RcQueue implements CompletionLoop.Handler, CqDrain.Sink, SharedCq.Member {
    /**
     * Receive buffers posted beyond the credits granted, for the peer's control messages, which need
     * no credit (they return credits; needing one could deadlock). {@link CreditWindow#controlDue}
     * bounds how many can be unprocessed at the peer.
     */
    private static final int CONTROL_SLOTS = ConnectionOptions.CONTROL_RECEIVE_BUFFERS;




    private final QueueOwner owner;
    private final ConnectionOptions options;
    private final RdmaRecorder recorder;
    private final CompletionLoop loop;
    private final boolean credits;
    private final Arena arena = Arena.ofAuto();
    /** Checks, counts and delivers the successful receives. */
    private final Inbound inbound;
    private final AtomicInteger outstanding = new AtomicInteger();

    /** The loops' protection domain for the device and its registration cache: shared, never closed here. */
    final Registrations registrations;
    public final ProtectionDomain pd;
    /** The application's registrations made through this connection, closed when it ends. */
    private final ConnectionLeases leases;
    /** Its CQ, own or shared, and what it drains. */
    private final CqBinding cqs;
    private final CompletionSource drain;
    private final QueuePair qp;
    /** The receive buffers, their slots and their re-posting. */
    private final Receives receives;
    /**
     * Guards the data path (this, the {@link SendQueue}, the {@link CreditWindow}, the {@link Rendezvous});
     * its holder reposts released buffers and posts the written sends before letting go.
     */
    public final ConnectionLock lock = new ConnectionLock();
    /** Set by the completion loop when it found the lock held: the holder drains the CQ before letting go. */
    private volatile boolean drainRequested;
    /** Whether the CQ is busy polled ({@link ConnectionOptions.CompletionMode#BUSY_POLL}). */
    private final boolean busyPolling;
    /** The send side: operations, send buffers, posting. */
    private final SendQueue sends;
    /** The credits protocol's control messages: credits returned, keepalive probes, the orderly close. */
    private final ControlMessages control;

    /** Completion loop only. */
    private boolean registered;
    /** Set under the lock when the connection left its loop; read by any thread. */
    private volatile boolean tornDown;
    private final Keepalive keepalive;
    private final Rendezvous rendezvous;
    /** What each completion means: the dispatch to the receive and send sides. */
    private final RcCompletions completions;

    /** Guarded by the lock; shared with the send side. */
    private final CreditWindow window;
    /** The connection's grants not ended yet: their leases are returned in {@link #afterDestroy()}. */
    public final WindowGrant.Live grants = new WindowGrant.Live();

    /**
     * CM loop: creates the CQ (on its loop's channel for the device) through {@code id}'s context, the QP
     * through the id, in the loops' protection domain for the device, registers the buffers there and
     * posts every receive. On failure the CQ and QP belong to the id, which the caller closes; the regions
     * made here are closed before the failure is thrown.
     *
     * @param device the loops' resources for the id's device: its protection domain, its shared CQs
     * @param pool the server's shared receive pool on that device, or {@code null}: the connection posts
     *             its own receive buffers
     */
    public RcQueue(CmId id, DeviceResources device, ConnectionOptions options, RdmaRecorder recorder,
            CompletionLoop loop, QueueOwner owner, ReceivePool pool) {
        assert owner.onCmLoop() : "made on the CM loop";
        Registrations registrations = device.domain();
        this.owner = owner;
        this.options = options;
        this.recorder = recorder;
        this.loop = loop;
        this.credits = options.protocol() == ConnectionOptions.Protocol.CREDITS;
        this.window = new CreditWindow(options.receiveBuffers(), 0);
        RcPort port = new RcPort(owner, registrations, lock, device.worker());
        this.rendezvous = new Rendezvous(port, options.largeMessageBudget(), options.largeMessageMemory());
        int maxRead = (int) Math.min(SendQueue.READ_PIECE, Math.max(4096,
                registrations.maxMessageSize(id.context(), id.portNumber())));
        this.registrations = registrations;
        pd = registrations.pd();
        leases = new ConnectionLeases(registrations);
        int recvCount = pool != null ? pool.perConnection() : options.receiveBuffers() + (credits ? CONTROL_SLOTS : 0);
        int depth = options.sendQueueDepth();
        busyPolling = options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL;
        device.checkCompletions(depth, recvCount, pool != null ? "the SharedReceivePool's quota or loanCap" : "ConnectionOptions.receiveBuffers");
        // What can be in flight: each posted send and each receive that can complete for it.
        cqs = new CqBinding(id, device, loop, options, depth + recvCount, this, owner::afterIdClosed);
        drain = cqs.source;
        qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cqs.cq)
                .sharedReceiveQueue(pool == null ? null : pool.srq())
                .depth(depth, recvCount).sge(1, 1).maxInlineData(options.maxInlineData()).build());
        cqs.created(qp, this);
        ReceiveRing ring = pool == null
                ? new ReceiveRing(lock, registrations.slabs(), qp, arena, recvCount, options.bufferSize(),
                        this::outstanding, credits ? repostBatch(options.receiveBuffers()) : 1) : null;
        Receives recv = ring != null ? ring : pool.join(lock);
        SendQueue made = null;
        try {
            made = new SendQueue(lock, registrations.slabs(), qp, arena, options, recorder, owner, window, rendezvous,
                    credits, maxRead, this::outstanding);
            sends = made;
            control = new ControlMessages(lock, sends, window, rendezvous, owner, credits);
            this.keepalive = new Keepalive(loop, credits ? options.keepalive().toNanos() : 0, control::probe);
            if (ring != null) {
                ring.postAll();
            }
        } catch (RuntimeException | Error e) {
            // The shared domain would keep these until the loops end. A region a posted receive uses is
            // deregistered once the id's close destroyed the QP (its work lease); the send side's blocks go
            // back to their slabs now: nothing was posted from them.
            recv.close();
            if (made != null) {
                made.closeRegions();
            }
            throw e;
        }
        receives = recv;
        inbound = new Inbound(options, recorder, lock, window, rendezvous, sends, control, receives,
                Math.max(recvCount, options.receiveBuffers() + CONTROL_SLOTS) + 1);
        completions = new RcCompletions(owner, recorder, keepalive, receives, sends, control, inbound,
                this::outstanding);
        port.bind(sends, receives, inbound);
        lock.deferred(new ConnectionLock.Deferred() {
            @Override
            public boolean pending() {
                return drainRequested || receives.hasReleased() || sends.leftWritten();
            }

            @Override
            public boolean beforeUnlock() {
                return RcQueue.this.beforeUnlock();
            }

            @Override
            public void afterUnlock() {
                sends.postSealed();
            }
        });
    }

    /**
     * How many released buffers a connection's own ring reposts together (credits protocol): an eighth of
     * the credits granted, from 1 to 8, so the peer keeps at least seven eighths of the window.
     *
     * @param granted the credits granted to the peer
     * @return the batch
     */
    static int repostBatch(int granted) {
        return Math.max(1, Math.min(8, granted / 8));
    }

    /**
     * Registers memory for the application through the domain's cache ({@link Registrations}); closed by
     * the application or when this connection ends.
     *
     * @throws IllegalStateException when the connection ended meanwhile
     */
    public RegisteredBuffer register(MemorySegment memory, rdmaflux.verbs.AccessFlags access) {
        return leases.register(memory, access);
    }

    /** {@return the queue pair (queries only: posting belongs to {@link SendQueue} and the receive re-posting here)} */
    public QueuePair queuePair() {
        return qp;
    }

    /** {@return the largest payload the QP sends inline} */
    int maxInlineData() {
        return qp.maxInlineData();
    }

    /** {@return the received messages, in order; one subscriber} */
    public Flux<RdmaMessage> inbound() {
        return inbound.flux();
    }

    /**
     * CM loop, once established: the peer's initial credits, then the CQ goes to the completion loop.
     *
     * @param peerCredits the credits the peer's hello granted
     * @param peerLargeMessages whether the peer's hello says it speaks large messages
     */
    public void start(int peerCredits, boolean peerLargeMessages) {
        assert owner.onCmLoop() : "CM loop only";
        inbound.largeMessages(credits && peerLargeMessages);
        if (credits) {
            lock.lock();
            try {
                window.start(peerCredits);
            } finally {
                lock.unlock();
            }
        }
        loop.execute(() -> {
            if (tornDown) {
                return;
            }
            cqs.joined(this);
            registered = true;
            lock.lock();
            try {
                drain.start();
            } finally {
                lock.unlock();
            }
            keepalive.start();
        });
    }

    /**
     * {@return the send side, where operations are queued or posted} Refused ones fail there with the
     * connection's failure once it is closed for sends.
     */
    public SendQueue sends() {
        return sends;
    }

    /**
     * CM loop: starts the orderly close (credits protocol): refuses new sends and posts the CLOSE
     * message, whose completion lets the connection disconnect, so the peer reads it before the DREQ.
     *
     * @return whether the close message was posted
     */
    public boolean sendClose() {
        assert owner.onCmLoop() : "CM loop only";
        return control.sendClose();
    }

    /** {@return whether the peer agreed on large messages} */
    public boolean largeMessages() {
        return inbound.largeMessages();
    }

    // ---------------------------------------------------------------- completions (completion loop)

    @Override
    public boolean busy() {
        // A drain left to the lock's holder counts: that drain, busy polling, does not re-arm the CQ, so the
        // loop must keep polling it (and re-arm it once idle) rather than wait for a notification. The
        // request is read first: the holder marks the activity before it clears the request.
        return (busyPolling && drainRequested) || drain.busy();
    }

    /**
     * The completion loop's turn for this CQ. It never waits for the lock: if another thread holds it, or a
     * sender is waiting for it, that thread drains the CQ before letting go.
     */
    @Override
    public boolean drain() {
        assert loop.inLoop() : "completion loop only";
        if (tornDown || !registered) {
            return false; // not established yet (shared CQ): its inbox keeps what arrived until start()
        }
        if (lock.hasQueuedThreads()) {
            // A sender waits for the lock: a spinning loop that took it back every turn would starve it
            // (the lock is not fair). The sender drains the CQ before it lets go.
            drainRequested = true;
            if (!lock.hasQueuedThreads()) {
                lock.offer(); // it got the lock and may have let go before it could see the request
            }
            return true;
        }
        if (lock.tryLock()) {
            boolean found = false;
            try {
                found = drainNow();
            } finally {
                if (found) {
                    lock.unlock();
                } else {
                    lock.unlockIdle(); // nothing dispatched, so nothing written: no deferred work of its own
                }
            }
            return found;
        }
        drainRequested = true;
        lock.offer(); // the holder may have let go meanwhile
        return true; // another thread is at work on this connection: not an idle turn
    }

    /**
     * Under the lock: polls the CQ (re-arming it), unless the connection left its loop.
     *
     * @return whether it found completions
     */
    private boolean drainNow() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        drainRequested = false;
        return !tornDown && drain.drain();
    }

    /**
     * A batch of completions is handled under one hold of the lock, so the sends it lets go (credits
     * granted, operations freed) and the buffers it reposts leave with one doorbell each.
     */
    @Override
    public void polled(int n) {
        recorder.pollBatch(n);
        lock.lock();
    }

    @Override
    public void handled() {
        lock.unlock();
    }

    @Override
    public void complete(WorkCompletions wc, int i) {
        completions.complete(wc, i);
    }

    @Override
    public CqInbox inbox() {
        return cqs.inbox();
    }

    /** A shared CQ put completions in the inbox: drained like a notified CQ of its own ({@link #drain()}). */
    @Override
    public void dispatched() {
        drain();
    }

    /**
     * The lock's holder, before it lets go: drains the CQ if the completion loop found the lock held,
     * reposts the released buffers (one {@code ibv_post_recv}), then
     * returns their credits, which must never reach the peer before the buffers are posted, and seals the
     * sends written meanwhile, posted (one {@code ibv_post_send}) once the lock was let go.
     *
     * @return whether there are sends to post
     */
    private boolean beforeUnlock() {
        if (drainRequested) {
            drain.touch(); // before the request is cleared: the loop sees one or the other (busy())
            drainNow();
        }
        boolean credited = receives.takeReleased(tornDown, window);
        credited |= receives.postReposts(window);
        if (credited) {
            control.maybeReturnCredits();
        }
        return sends.seal();
    }

    // ---------------------------------------------------------------- teardown

    /**
     * Leaves the completion loop: a final drain (messages that arrived before the disconnect are
     * delivered, and the peer's orderly close recognised), then every unfinished operation fails and
     * {@code receive()} ends; {@code after} gets the end (on the completion loop).
     *
     * @param cause the failure, or {@code null} for an orderly close
     * @param remoteClose whether the peer disconnected
     * @param after told how the connection ended
     */
    public void shutdown(Throwable cause, boolean remoteClose, java.util.function.Consumer<Throwable> after) {
        sends.closeForSends();
        loop.execute(() -> {
            Throwable end = cause;
            lock.lock();
            try {
                if (registered) {
                    cqs.finalDrain();
                }
                tornDown = true; // no holder drains the CQ from now on
            } finally {
                lock.unlock();
            }
            cqs.left(registered);
            registered = false;
            keepalive.stop();
            if (end == null && remoteClose && credits && !inbound.peerClosed()) {
                end = new RdmaCmException.Disconnected(Step.TRANSFER,
                        "the peer disconnected without an orderly close (did its process die?)");
            }
            Throwable opFailure = end != null ? end : new IllegalStateException("connection closed");
            lock.lock();
            try {
                failAllOps(opFailure);
            } finally {
                lock.unlock();
            }
            inbound.end(end);
            after.accept(end);
        });
    }

    /** Guarded by the lock. */
    private void failAllOps(Throwable cause) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        rendezvous.close(cause);
        sends.failAll(cause);
    }

    /** Counts posted, uncompleted work requests for the recorder and for the final reckoning. */
    private void outstanding(int delta) {
        outstanding.addAndGet(delta);
        recorder.outstanding(delta);
    }

    /** CM loop, before the id (and with it the QP) is destroyed: what never completed dies with it. */
    public void forgetOutstanding() {
        assert owner.onCmLoop() : "CM loop only";
        outstanding(-outstanding.get());
    }

    /**
     * CM loop, after the id (and with it the QP) is destroyed: the memory of large messages and the
     * application's registrations that operations never completed with, which no device uses any more.
     */
    public void afterDestroy() {
        assert owner.onCmLoop() : "CM loop only";
        rendezvous.freeAll();
        grants.endAll(); // their windows died with the QP
        sends.releaseLeases();
        // The domain outlives the connection: what the connection registered in it goes now, children
        // before the parent (the QP and windows are gone, so no region is bound or referenced any more).
        leases.closeAll();
        receives.close();
        sends.closeRegions();
    }
}
