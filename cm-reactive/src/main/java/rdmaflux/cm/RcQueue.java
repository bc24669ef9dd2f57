package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import reactor.util.concurrent.Queues;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.WcOpcode;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * The data path of one RC connection: its native objects, its CQ (drained by a {@link CqDrain} on the
 * completion loop) and the dispatch of each completion, the receive slots lent to the application and
 * their re-posting, the {@link CreditWindow}, and teardown. The send side (operations, send buffers,
 * posting) is its {@link SendQueue}.
 *
 * <p>Threads: created on the CM loop (the CQ is made through the CM id's context and the QP through the id,
 * so closing the id frees them; the regions are made in the loops' protection domain for the device, which
 * outlives the connection, so {@link #afterDestroy()} closes them); application threads post sends and
 * release messages. Everything else is guarded by the connection's {@link ConnectionLock}: the send side,
 * the receive re-posting, the credit window, and the {@link CqDrain} with the dispatch of completions and
 * the inbound sink's emission. The completion loop drains the CQ when it is notified, unless another
 * thread holds the lock: then that thread drains it before letting go, so the loop never waits for it.
 */
final class RcQueue implements CompletionLoop.Handler, CqDrain.Sink, Rendezvous.Port {
    /**
     * Receive buffers posted beyond the credits granted, for the peer's control messages, which need
     * no credit (they return credits; needing one could deadlock). {@link CreditWindow#controlDue}
     * bounds how many can be unprocessed at the peer.
     */
    private static final int CONTROL_SLOTS = ConnectionOptions.CONTROL_RECEIVE_BUFFERS;
    private static final long RECV_TAG = 1L << 62;
    private static final ValueLayout.OfLong BIG_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BIG_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    /** What the queue tells its connection. */
    interface Owner {
        /** Completion loop: the orderly close message left; the connection may disconnect now. */
        void closeSent();

        /**
         * Completion loop: a work request failed; the connection fails.
         *
         * @param error the typed failure
         */
        void transferFailed(Throwable error);

        /** {@return why the connection is going away, to report instead of a flush error; or {@code null}} */
        Throwable failure();
    }

    /** What a send-queue operation is. */
    enum Kind {
        SEND, CONTROL, CLOSE, READ, WRITE, WRITE_IMM, CAS, FAA,
        /** A large message's descriptor (its sink completes when the peer finished reading it). */
        LARGE,
        /** The RDMA READ of a peer's large message. */
        LARGE_READ,
        /** The bind of a {@link WindowGrant}'s memory window (its sink gets the window's {@link RemoteBuffer}). */
        BIND,
        /** The local invalidate of a {@link WindowGrant}'s key. */
        INVALIDATE
    }


    private final Owner owner;
    private final ConnectionOptions options;
    private final RdmaRecorder recorder;
    private final CompletionLoop loop;
    private final boolean credits;
    private final Arena arena = Arena.ofAuto();
    private final Sinks.Many<RdmaMessage> inbound;
    private final AtomicInteger outstanding = new AtomicInteger();

    /** The loops' protection domain for the device and its registration cache: shared, never closed here. */
    final Registrations registrations;
    final ProtectionDomain pd;
    /** The application's registrations made through this connection, closed when it ends. */
    private final java.util.Set<Registration.Lease> leases = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Set once {@link #afterDestroy()} started closing {@link #leases}: no registration is taken after. */
    private volatile boolean released;
    private final CompletionQueue cq;
    private final CqDrain drain;
    private final QueuePair qp;
    private final MemoryRegion recvMr;
    private final ReceiveSlot[] slots;
    private final ReceiveRequests recvBatch;
    /** The slot of each request written to {@link #recvBatch} and not posted yet; guarded by the lock. */
    private final ReceiveSlot[] reposting;
    private int reposts;
    /**
     * Guards the data path (this, the {@link SendQueue}, the {@link CreditWindow}, the {@link Rendezvous});
     * its holder reposts released buffers and posts the written sends before letting go.
     */
    final ConnectionLock lock = new ConnectionLock();
    /** Set by the completion loop when it found the lock held: the holder drains the CQ before letting go. */
    private volatile boolean drainRequested;
    /** Slots the application released, for the lock's holder, linked through {@link ReceiveSlot#nextReleased}. */
    private final AtomicReference<ReceiveSlot> releasedSlots = new AtomicReference<>();
    /** The send side: operations, send buffers, posting. */
    private final SendQueue sends;

    /** Completion loop only. */
    private boolean registered;
    /** Set under the lock when the connection left its loop; read by any thread. */
    private volatile boolean tornDown;
    // Guarded by the lock (written while completions are dispatched).
    private boolean peerClosed;
    private final Keepalive keepalive;
    private final Rendezvous rendezvous;
    /** The peer's protocol violation this queue failed the connection with, or null. */
    private RdmaCmException.ProtocolViolation violation;
    /** A work completion error this queue failed the connection with, or null. */
    private Throwable localFailure;
    /** Whether the peer speaks large messages; set before the queue is started. */
    private volatile boolean largeMessages;

    /** Guarded by the lock; shared with the send side. */
    private final CreditWindow window;
    /** The connection's grants not ended yet: their leases are returned in {@link #afterDestroy()}. */
    final WindowGrant.Live grants = new WindowGrant.Live();

    /**
     * CM loop: creates the CQ (on its loop's channel for the device) through {@code id}'s context, the QP
     * through the id, in the loops' protection domain for the device, registers the buffers there and
     * posts every receive. On failure the CQ and QP belong to the id, which the caller closes; the regions
     * made here are closed before the failure is thrown.
     *
     * @param registrations the loops' protection domain for the id's device
     */
    RcQueue(CmId id, Registrations registrations, ConnectionOptions options, RdmaRecorder recorder,
            CompletionLoop loop, Owner owner) {
        this.owner = owner;
        this.options = options;
        this.recorder = recorder;
        this.loop = loop;
        this.credits = options.protocol() == ConnectionOptions.Protocol.CREDITS;
        this.inbound = Sinks.many().unicast().onBackpressureBuffer(
                Queues.<RdmaMessage>get(options.receiveBuffers() + CONTROL_SLOTS + 1).get());
        this.window = new CreditWindow(options.receiveBuffers(), 0);
        this.rendezvous = new Rendezvous(this, options.largeMessageBudget(), options.largeMessageMemory());
        int maxRead = (int) Math.min(SendQueue.READ_PIECE, Math.max(4096,
                registrations.maxMessageSize(id.context(), id.portNumber())));
        RdmaContext ctx = id.context();
        this.registrations = registrations;
        pd = registrations.pd();
        int recvCount = options.receiveBuffers() + (credits ? CONTROL_SLOTS : 0);
        int depth = options.sendQueueDepth();
        cq = ctx.createCompletionQueue(depth + recvCount, loop.channel(id.sharedContext()),
                loop.completionVector(ctx.completionVectorCount()));
        drain = new CqDrain(cq, this, options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL
                ? Math.max(1, options.busyPoll().toNanos()) : 0);
        qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                .depth(depth, recvCount).sge(1, 1).maxInlineData(options.maxInlineData()).build());
        int size = options.bufferSize();
        MemorySegment recvMemory = allocate(arena, (long) size * recvCount, 64);
        recvMr = pd.register(recvMemory);
        SendQueue made = null;
        try {
            made = new SendQueue(lock, registrations.slabs(), qp, arena, options, recorder, owner, window, rendezvous,
                    credits, maxRead, this::outstanding);
            sends = made;
            this.keepalive = new Keepalive(loop::schedule, credits ? options.keepalive().toNanos() : 0, sends::probe);
            recvBatch = new ReceiveRequests(recvCount, 1);
            slots = new ReceiveSlot[recvCount];
            for (int i = 0; i < recvCount; i++) {
                slots[i] = new ReceiveSlot(this, i, recvMemory.asSlice((long) size * i, size));
                recvBatch.set(i, RECV_TAG | i).sge(i, 0, recvMr, (long) size * i, size);
            }
            qp.postReceive(recvBatch, recvCount);
        } catch (RuntimeException | Error e) {
            // The shared domain would keep these until the loops end. A region a posted receive uses is
            // deregistered once the id's close destroyed the QP (its work lease); the send side's blocks go
            // back to their slabs now: nothing was posted from them.
            recvMr.close();
            if (made != null) {
                made.closeRegions();
            }
            throw e;
        }
        outstanding(recvCount);
        reposting = new ReceiveSlot[recvCount];
        lock.deferred(new ConnectionLock.Deferred() {
            @Override
            public boolean pending() {
                return drainRequested || releasedSlots.get() != null || sends.leftWritten();
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
     * Allocates a connection's buffers. Running out of direct memory (the JVM's limit, by default the
     * heap's maximum) fails that one connection with a typed error that says what to change, rather than
     * escaping its loop as an {@link OutOfMemoryError}.
     *
     * @param arena where the memory lives
     * @param bytes how much
     * @param align its alignment
     * @return the memory
     * @throws rdmaflux.verbs.RdmaResourceException when the JVM refuses the memory
     */
    static MemorySegment allocate(Arena arena, long bytes, long align) {
        try {
            return arena.allocate(bytes, align);
        } catch (OutOfMemoryError e) {
            rdmaflux.verbs.RdmaResourceException x = new rdmaflux.verbs.RdmaResourceException("allocate",
                    rdmaflux.verbs.Errno.ENOMEM, bytes + " bytes of connection buffers: " + e.getMessage()
                    + "; raise -XX:MaxDirectMemorySize or use smaller buffers (ConnectionOptions.bufferSize, "
                    + "receiveBuffers, sendBuffers)");
            x.initCause(e);
            throw x;
        }
    }

    /**
     * Registers memory for the application through the domain's cache ({@link Registrations}); closed by
     * the application or when this connection ends.
     *
     * @throws IllegalStateException when the connection ended meanwhile
     */
    RegisteredBuffer register(MemorySegment memory, rdmaflux.verbs.AccessFlags access) {
        Registration.Lease lease = registrations.lease(memory, access, leases);
        // Added to the set before the flag is read; afterDestroy sets it before reading the set: one sees the other.
        if (released) {
            lease.close();
            throw new IllegalStateException("the connection is closed");
        }
        return lease.view();
    }

    /** {@return the queue pair (queries only: posting belongs to {@link SendQueue} and the receive re-posting here)} */
    QueuePair queuePair() {
        return qp;
    }

    /** {@return the largest payload the QP sends inline} */
    int maxInlineData() {
        return qp.maxInlineData();
    }

    /** {@return the received messages, in order; one subscriber} */
    Flux<RdmaMessage> inbound() {
        return inbound.asFlux();
    }

    /**
     * CM loop, once established: the peer's initial credits, then the CQ goes to the completion loop.
     *
     * @param peerCredits the credits the peer's hello granted
     * @param peerLargeMessages whether the peer's hello says it speaks large messages
     */
    void start(int peerCredits, boolean peerLargeMessages) {
        largeMessages = credits && peerLargeMessages;
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
            loop.register(cq, this);
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

    /** Refuses new operations from now on; any thread. */
    void closeForSends() {
        sends.closeForSends();
    }

    /** {@return whether new operations are refused} */
    boolean closedForSends() {
        return sends.closedForSends();
    }

    /**
     * Queues or posts an operation whose end {@code sink} is told ({@link SendQueue#enqueue}): on the
     * completion loop, under the send queue's lock, with the atomic's old value for atomics. {@code a} and
     * {@code b} are the immediate data (WRITE_IMM) or the atomic operands.
     */
    void enqueue(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                 MonoSink<Object> sink) {
        sends.enqueue(kind, data, local, remote, a, b, null, sink);
    }


    /**
     * Queues or posts a {@link Kind#BIND} or {@link Kind#INVALIDATE} of a grant.
     *
     * @param kind the operation
     * @param grant the grant it is for
     * @return ends when its work completes: a bind with the window's {@link RemoteBuffer}
     */
    Mono<Object> submit(Kind kind, WindowGrant grant) {
        return sends.submit(kind, grant);
    }

    /**
     * CM loop: starts the orderly close (credits protocol): refuses new sends and posts the CLOSE
     * message, whose completion lets the connection disconnect, so the peer reads it before the DREQ.
     *
     * @return whether the close message was posted
     */
    boolean sendClose() {
        return sends.sendClose();
    }

    /** {@return whether the peer agreed on large messages} */
    boolean largeMessages() {
        return largeMessages;
    }

    // ---------------------------------------------------------------- completions (completion loop)

    @Override
    public boolean busy() {
        return drain.busy();
    }

    /**
     * The completion loop's turn for this CQ. It never waits for the lock: if another thread holds it, or a
     * sender is waiting for it, that thread drains the CQ before letting go.
     */
    @Override
    public boolean drain() {
        if (tornDown) {
            return false;
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
            try {
                return drainNow();
            } finally {
                lock.unlock();
            }
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
        keepalive.touch();
        long wrId = wc.wrId(i);
        boolean ok = wc.isSuccess(i);
        outstanding(-1);
        if ((wrId & RECV_TAG) != 0) {
            ReceiveSlot slot = slots[(int) (wrId & ~RECV_TAG)];
            if (!ok) {
                slot.state(ReceiveSlot.DEAD);
                completionError(wc, i);
                return;
            }
            if (violation != null) {
                slot.state(ReceiveSlot.DEAD); // nothing more the peer sends is believed
                return;
            }
            try {
                received(slot, wc, i);
            } catch (RuntimeException e) {
                // What the peer's bytes make of this connection fails it alone: never the completion
                // loop, nor the completions polled with this one (other connections' included).
                slot.state(ReceiveSlot.DEAD);
                violation = e instanceof RdmaCmException.ProtocolViolation v ? v
                        : violation("its message broke the receiver (" + e + ")", e);
                localFailure = violation;
                owner.transferFailed(violation);
            }
            return;
        }
        if (!ok) {
            sends.failed((int) wrId, completionError(wc, i));
            return;
        }
        sends.completed((int) wrId);
    }

    private static RdmaCmException.ProtocolViolation violation(String message, Throwable cause) {
        RdmaCmException.ProtocolViolation v = new RdmaCmException.ProtocolViolation(Step.TRANSFER, message);
        v.initCause(cause);
        return v;
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

    /**
     * Completion loop: one successful receive. Everything the peer controls (immediate data, length,
     * descriptor) is checked before anything is delivered or counted.
     *
     * @throws RdmaCmException.ProtocolViolation when the peer broke the protocol (docs/protocol.md)
     */
    private void received(ReceiveSlot slot, WorkCompletions wc, int i) {
        int len = wc.byteLength(i);
        if (wc.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM) {
            if (credits) {
                lock.lock();
                try {
                    window.delivered();
                } finally {
                    lock.unlock();
                }
            }
            slot.deliver(0, true, wc.immediateData(i), credits);
            if (!rendezvous.queueBehindLarge(slot)) {
                emit(slot, 0);
            }
            return;
        }
        if (credits) {
            if (!wc.hasImmediate(i)) {
                throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "a SEND of " + len + " bytes without "
                        + "immediate data (every SEND of the credits protocol carries it)");
            }
            int imm = wc.immediateData(i);
            boolean control = (imm & Wire.CONTROL) != 0;
            boolean large = !control && (imm & Wire.LARGE) != 0;
            if (large) {
                checkDescriptor(slot, len);
            }
            lock.lock();
            try {
                int finished = (imm >>> Wire.FINISHED_SHIFT) & Wire.FINISHED;
                if (finished > 0) {
                    rendezvous.finished(finished);
                }
                window.grant(imm & Wire.CREDITS);
                if (control) {
                    if ((imm & Wire.CLOSE) != 0) {
                        peerClosed = true;
                    }
                    repost(slot);
                    sends.drainPending();
                    return;
                }
                window.delivered();
                if (large) {
                    slot.deliver(len, false, 0, true);
                    MemorySegment d = slot.data();
                    rendezvous.arrived(slot, d.get(BIG_LONG, 0), d.get(BIG_INT, 8), d.get(BIG_INT, 12));
                    sends.drainPending();
                    return;
                }
                sends.drainPending();
            } finally {
                lock.unlock();
            }
        }
        slot.deliver(len, false, 0, credits);
        if (!rendezvous.queueBehindLarge(slot)) {
            emit(slot, len);
        }
    }

    /**
     * Completion loop: a large message's descriptor (docs/protocol.md) is valid, before it counts.
     *
     * @throws RdmaCmException.ProtocolViolation when it is not
     */
    private void checkDescriptor(ReceiveSlot slot, int len) {
        int length = len == Wire.DESCRIPTOR ? slot.rawData().get(BIG_INT, 12) : 0;
        if (!largeMessages || len != Wire.DESCRIPTOR || length <= 0) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "a large-message descriptor of " + len
                    + " bytes announcing " + length + " bytes" + (largeMessages ? ""
                    : " on a connection that did not agree on large messages"));
        }
        if (length > options.maxInboundMessageSize()) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "a message of " + length
                    + " bytes, more than this side accepts (ConnectionOptions.maxInboundMessageSize "
                    + options.maxInboundMessageSize() + ")");
        }
    }

    @Override
    public void emit(RdmaMessage message, int len) {
        recorder.messageReceived(len);
        // The application holds one delivery, never the slot, which takes newer messages.
        RdmaMessage out = message instanceof ReceiveSlot slot ? slot.lend() : message;
        if (inbound.tryEmitNext(out).isFailure()) {
            out.release();
        }
    }

    /**
     * Any thread, after {@link ReceiveSlot#take}: the slot waits on the release stack for the lock's holder
     * (this thread, if the lock is free), who reposts it and counts its credit. Never waits for the lock.
     *
     * @param slot the slot, taken from the application
     */
    void released(ReceiveSlot slot) {
        ReceiveSlot head;
        do {
            head = releasedSlots.get();
            slot.nextReleased = head;
        } while (!releasedSlots.compareAndSet(head, slot));
        lock.offer();
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
            drainNow();
        }
        boolean credited = false;
        for (ReceiveSlot s = releasedSlots.get() == null ? null : releasedSlots.getAndSet(null); s != null; ) {
            ReceiveSlot next = s.nextReleased;
            s.nextReleased = null;
            if (tornDown || qp.isClosed()) {
                s.state(ReceiveSlot.DEAD);
                if (s.counted) {
                    window.dropped();
                }
            } else {
                repost(s);
                if (s.counted) {
                    window.released();
                    credited = true;
                }
            }
            s = next;
        }
        postReposts();
        if (credited) {
            sends.maybeReturnCredits();
        }
        return sends.seal();
    }

    /** Guarded by the lock: the buffer is posted again before the lock is let go. */
    private void repost(ReceiveSlot slot) {
        slot.state(ReceiveSlot.POSTED);
        int i = reposts++;
        reposting[i] = slot;
        recvBatch.set(i, RECV_TAG | slot.index).sge(i, 0, recvMr, (long) options.bufferSize() * slot.index,
                options.bufferSize());
    }

    /** Guarded by the lock: posts the buffers {@link #repost} wrote, as one chain. */
    private void postReposts() {
        int n = reposts;
        if (n == 0) {
            return;
        }
        reposts = 0;
        int posted = n;
        try {
            qp.postReceive(recvBatch, n);
        } catch (RuntimeException e) {
            posted = recvBatch.lastPosted(); // the QP is closed or broken: the rest is never filled again
        }
        outstanding(posted);
        for (int i = 0; i < n; i++) {
            if (i >= posted) {
                reposting[i].state(ReceiveSlot.DEAD);
            }
            reposting[i] = null;
        }
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
    void shutdown(Throwable cause, boolean remoteClose, java.util.function.Consumer<Throwable> after) {
        sends.closeForSends();
        loop.execute(() -> {
            Throwable end = cause;
            lock.lock();
            try {
                if (registered) {
                    drain.finalDrain();
                }
                tornDown = true; // no holder drains the CQ from now on
            } finally {
                lock.unlock();
            }
            if (registered) {
                loop.unregister(cq);
                registered = false;
            }
            keepalive.stop();
            if (end == null && remoteClose && credits && !peerClosed) {
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
            if (end != null) {
                inbound.tryEmitError(end);
            } else {
                inbound.tryEmitComplete();
            }
            after.accept(end);
        });
    }

    /** Guarded by the lock. */
    private void failAllOps(Throwable cause) {
        rendezvous.close(cause);
        sends.failAll(cause);
    }

    /** Counts posted, uncompleted work requests for the recorder and for the final reckoning. */
    private void outstanding(int delta) {
        outstanding.addAndGet(delta);
        recorder.outstanding(delta);
    }

    /** CM loop, before the id (and with it the QP) is destroyed: what never completed dies with it. */
    void forgetOutstanding() {
        outstanding(-outstanding.get());
    }

    /**
     * CM loop, after the id (and with it the QP) is destroyed: the memory of large messages and the
     * application's registrations that operations never completed with, which no device uses any more.
     */
    void afterDestroy() {
        rendezvous.freeAll();
        grants.endAll(); // their windows died with the QP
        sends.releaseLeases();
        // The domain outlives the connection: what the connection registered in it goes now, children
        // before the parent (the QP and windows are gone, so no region is bound or referenced any more).
        released = true;
        for (Registration.Lease lease : leases) {
            lease.close();
        }
        recvMr.close();
        sends.closeRegions();
    }

    // ---------------------------------------------------------------- Rendezvous.Port

    @Override
    public reactor.core.scheduler.Scheduler worker() {
        return reactor.core.scheduler.Schedulers.boundedElastic();
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public Registrations registrations() {
        return registrations;
    }

    @Override
    public ConnectionLock lock() {
        return lock;
    }

    @Override
    public void postRead(LargeReceive message) {
        sends.postRead(message);
    }

    @Override
    public void resume() {
        lock.lock();
        try {
            sends.drainPending();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void fail(Throwable cause) {
        owner.transferFailed(cause);
    }

    @Override
    public void releaseSlot(ReceiveSlot slot) {
        if (slot.take(slot.generation())) {
            released(slot);
        }
    }
}
