package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

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
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WcOpcode;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * The data path of one RC connection: its CQ (drained by a {@link CqDrain} on the completion loop), the
 * receive slots lent to the application, the table of posted send-queue operations, posting, and the
 * {@link CreditWindow}.
 *
 * <p>Threads: created on the CM loop (all native objects are made through the CM id's context, so
 * closing the id frees them); completions are taken on the completion loop; application threads post
 * sends and release messages. The send side, the receive re-posting and the credit window are guarded
 * by {@code this}; the {@link CqDrain} and the inbound sink's emission belong to the completion loop.
 */
final class RcQueue implements CompletionLoop.Handler, CqDrain.Sink, Rendezvous.Port {
    /**
     * Receive buffers posted beyond the credits granted, for the peer's control messages, which need
     * no credit (they return credits; needing one could deadlock). {@link CreditWindow#controlDue}
     * bounds how many can be unprocessed at the peer.
     */
    private static final int CONTROL_SLOTS = ConnectionOptions.CONTROL_RECEIVE_BUFFERS;
    private static final long RECV_TAG = 1L << 62;
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
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

    /** A posted send-queue work request and whom to tell when it completes. */
    private static final class Op {
        final int index;
        Kind kind;
        MonoSink<Object> sink;
        int sendSlot = -1;
        int bytes;
        long started;
        /**
         * The large message a {@link Kind#LARGE} or {@link Kind#LARGE_READ} operation is for; the
         * {@link RemoteBuffer} a {@link Kind#BIND} gave.
         */
        Object large;
        /** The application's registration it uses, leased until it completes or the QP is gone. */
        Registration lease;

        Op(int index) {
            this.index = index;
        }
    }

    /**
     * A request waiting for a send buffer, a send-queue entry or a credit. Only requests that cannot be
     * posted at once are queued, so the common case allocates none.
     */
    private record Pending(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                           MonoSink<Object> sink, Object large) {
    }

    private final Owner owner;
    private final ConnectionOptions options;
    private final RdmaRecorder recorder;
    private final CompletionLoop loop;
    private final boolean credits;
    private final Arena arena = Arena.ofAuto();
    private final Sinks.Many<RdmaMessage> inbound;
    private final AtomicInteger outstanding = new AtomicInteger();

    final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final CqDrain drain;
    private final QueuePair qp;
    private final MemoryRegion recvMr;
    private final MemoryRegion sendMr;
    private final MemoryRegion atomicMr;
    private final ReceiveSlot[] slots;
    private final MemorySegment sendBuffers;
    private final MemorySegment atomics;
    private final ReceiveRequests recvBatch;

    // Completion loop only (tornDown is also read by releasing threads).
    private boolean registered;
    private volatile boolean tornDown;
    private boolean peerClosed;
    private final Keepalive keepalive;
    private final Rendezvous rendezvous;
    /**
     * A large message is read in pieces of at most this: {@link #READ_PIECE}, or the port's largest message
     * if smaller (1 GiB on some NICs), so any message size works on any device.
     */
    private final int maxRead;
    private static final int READ_PIECE = 64 << 20;
    /** Large messages with pieces left to read once an operation is free; guarded by this. */
    private final ArrayDeque<LargeReceive> reads = new ArrayDeque<>();
    /** Whether the peer speaks large messages; set before the queue is started. */
    private volatile boolean largeMessages;

    // Send side, guarded by this.
    private final Op[] ops;
    private final ArrayDeque<Op> freeOps = new ArrayDeque<>();
    private final int[] freeSendSlots;
    private int freeSendTop;
    private final CreditWindow window;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /**
     * Per send buffer slot, a ByteBuffer view of its memory, made on the slot's first use: copying a
     * message in through it allocates nothing (MemorySegment.ofBuffer would wrap each message).
     */
    private final ByteBuffer[] sendViews;
    private final SendRequests sendBatch = new SendRequests(1, 1);
    private volatile boolean closed;
    /** The connection's grants not ended yet: their leases are returned in {@link #afterDestroy()}. */
    final WindowGrant.Live grants = new WindowGrant.Live();

    /**
     * CM loop: creates the PD, completion channel, CQ, QP and buffers through {@code id}'s context and
     * posts every receive. On failure what was made belongs to the id, which the caller closes.
     */
    RcQueue(CmId id, ConnectionOptions options, RdmaRecorder recorder, CompletionLoop loop, Owner owner) {
        this.owner = owner;
        this.options = options;
        this.recorder = recorder;
        this.loop = loop;
        this.credits = options.protocol() == ConnectionOptions.Protocol.CREDITS;
        this.inbound = Sinks.many().unicast().onBackpressureBuffer(
                Queues.<RdmaMessage>get(options.receiveBuffers() + CONTROL_SLOTS + 1).get());
        this.window = new CreditWindow(options.receiveBuffers(), 0);
        this.rendezvous = new Rendezvous(this, options.largeMessageBudget(), options.largeMessageMemory());
        this.maxRead = (int) Math.min(READ_PIECE, Math.max(4096,
                id.context().queryPort(id.portNumber()).maxMessageSize()));
        this.keepalive = new Keepalive(loop::schedule, credits ? options.keepalive().toNanos() : 0, this::probe);
        RdmaContext ctx = id.context();
        pd = ctx.allocateProtectionDomain();
        int recvCount = options.receiveBuffers() + (credits ? CONTROL_SLOTS : 0);
        int depth = options.sendQueueDepth();
        cq = ctx.createCompletionQueue(depth + recvCount, loop.channel(id.sharedContext()),
                loop.completionVector(ctx.completionVectorCount()));
        drain = new CqDrain(cq, this, options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL
                ? Math.max(1, options.busyPoll().toNanos()) : 0);
        qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                .depth(depth, recvCount).sge(1, 1).maxInlineData(options.maxInlineData()).build());
        int size = options.bufferSize();
        MemorySegment recvMemory = arena.allocate((long) size * recvCount, 64);
        recvMr = pd.register(recvMemory);
        sendBuffers = arena.allocate((long) size * options.sendBuffers(), 64);
        sendMr = pd.register(sendBuffers);
        ops = new Op[qp.maxSendWr()];
        atomics = arena.allocate(8L * ops.length, 8);
        atomicMr = pd.register(atomics);
        for (int i = 0; i < ops.length; i++) {
            ops[i] = new Op(i);
            freeOps.add(ops[i]);
        }
        freeSendSlots = new int[options.sendBuffers()];
        for (int i = 0; i < freeSendSlots.length; i++) {
            freeSendSlots[i] = freeSendSlots.length - 1 - i;
        }
        freeSendTop = freeSendSlots.length;
        sendViews = new ByteBuffer[freeSendSlots.length];
        recvBatch = new ReceiveRequests(recvCount, 1);
        slots = new ReceiveSlot[recvCount];
        for (int i = 0; i < recvCount; i++) {
            slots[i] = new ReceiveSlot(this, i, recvMemory.asSlice((long) size * i, size));
            recvBatch.set(i, RECV_TAG | i).sge(i, 0, recvMr, (long) size * i, size);
        }
        qp.postReceive(recvBatch, recvCount);
        outstanding(recvCount);
    }

    /** {@return the queue pair (queries only: posting belongs to this class)} */
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
            synchronized (this) {
                window.grant(peerCredits);
            }
        }
        loop.execute(() -> {
            if (tornDown) {
                return;
            }
            loop.register(cq, this);
            registered = true;
            drain.start();
            keepalive.start();
        });
    }

    /** Completion loop: the keepalive probe, a control message (no credit needed) unless one is on its way. */
    private void probe() {
        synchronized (this) {
            if (!closed && !window.controlInFlight()) {
                postControl(Kind.CONTROL);
            }
        }
    }

    /** Refuses new operations from now on; any thread. */
    void closeForSends() {
        closed = true;
    }

    /** {@return whether new operations are refused} */
    boolean closedForSends() {
        return closed;
    }

    // ---------------------------------------------------------------- completions (completion loop)

    @Override
    public boolean busy() {
        return drain.busy();
    }

    @Override
    public void drain() {
        if (!tornDown) {
            drain.drain();
        }
    }

    @Override
    public void polled(int n) {
        recorder.pollBatch(n);
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
                slot.state = ReceiveSlot.DEAD;
                completionError(wc, i);
                return;
            }
            received(slot, wc, i);
            return;
        }
        LargeReceive read = null;
        synchronized (this) {
            Op op = ops[(int) wrId];
            if (!ok) {
                finishOp(op, null, completionError(wc, i));
                return;
            }
            Kind kind = op.kind;
            if (kind == Kind.LARGE_READ) {
                LargeReceive r = (LargeReceive) op.large;
                r.bytesRead += op.bytes;
                if (r.bytesRead == r.length) {
                    read = r; // its last piece
                }
            }
            long latency = System.nanoTime() - op.started;
            Object result = null;
            switch (kind) {
                case SEND -> {
                    recorder.messageSent(op.bytes);
                    recorder.operationLatency("send", latency);
                }
                case CONTROL -> window.controlCompleted();
                case CLOSE -> owner.closeSent();
                case CAS, FAA -> {
                    result = atomics.get(ValueLayout.JAVA_LONG, 8L * op.index);
                    recorder.operationLatency(kind == Kind.CAS ? "cas" : "faa", latency);
                }
                case READ -> recorder.operationLatency("read", latency);
                case WRITE -> recorder.operationLatency("write", latency);
                case WRITE_IMM -> recorder.operationLatency("write_imm", latency);
                case LARGE -> recorder.operationLatency("send_large_descriptor", latency);
                case LARGE_READ -> recorder.operationLatency("read_large", latency);
                case BIND -> {
                    result = op.large;
                    recorder.operationLatency("bind_window", latency);
                }
                case INVALIDATE -> recorder.operationLatency("invalidate", latency);
            }
            finishOp(op, result, null);
            if (read == null) {
                drainPending();
                maybeReturnCredits();
            }
        }
        if (read != null) {
            rendezvous.readDone(read); // delivers it and what waited behind it, off the monitor
            synchronized (this) {
                drainPending();
                maybeReturnCredits();
            }
        }
    }

    private Throwable completionError(WorkCompletions wc, int i) {
        WcStatus status = wc.status(i);
        if (status == WcStatus.WR_FLUSH_ERR) {
            // Flushes follow a failure or a disconnect; report that, not the flush.
            Throwable f = owner.failure();
            return f != null ? f : new RdmaCmException.Disconnected(Step.TRANSFER, "connection closed");
        }
        recorder.completionError(status);
        RdmaCmException.CompletionError e = new RdmaCmException.CompletionError(status,
                "work completion failed: " + wc.describe(i));
        owner.transferFailed(e);
        return e;
    }

    private void received(ReceiveSlot slot, WorkCompletions wc, int i) {
        int len = wc.byteLength(i);
        if (wc.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM) {
            if (credits) {
                synchronized (this) {
                    window.delivered();
                }
            }
            slot.deliver(0, true, wc.immediateData(i), credits);
            if (!rendezvous.queueBehindLarge(slot)) {
                emit(slot, 0);
            }
            return;
        }
        if (credits && wc.hasImmediate(i)) {
            int imm = wc.immediateData(i);
            synchronized (this) {
                int finished = (imm >>> Wire.FINISHED_SHIFT) & Wire.FINISHED;
                if (finished > 0 && !rendezvous.finished(finished)) {
                    slot.state = ReceiveSlot.DEAD;
                    return;
                }
                window.grant(imm & Wire.CREDITS);
                if ((imm & Wire.CONTROL) != 0) {
                    if ((imm & Wire.CLOSE) != 0) {
                        peerClosed = true;
                    }
                    repost(slot);
                    drainPending();
                    return;
                }
                window.delivered();
                if ((imm & Wire.LARGE) != 0) {
                    slot.deliver(len, false, 0, true);
                    descriptor(slot, len);
                    drainPending();
                    return;
                }
                drainPending();
            }
        }
        slot.deliver(len, false, 0, credits && wc.hasImmediate(i));
        if (!rendezvous.queueBehindLarge(slot)) {
            emit(slot, len);
        }
    }

    /** Completion loop, guarded by this: a large message's descriptor arrived (docs/protocol.md). */
    private void descriptor(ReceiveSlot slot, int len) {
        MemorySegment d = slot.data();
        long address = len == Wire.DESCRIPTOR ? d.get(BIG_LONG, 0) : 0;
        int rkey = len == Wire.DESCRIPTOR ? d.get(BIG_INT, 8) : 0;
        int length = len == Wire.DESCRIPTOR ? d.get(BIG_INT, 12) : 0;
        if (!largeMessages || len != Wire.DESCRIPTOR || length <= 0) {
            slot.state = ReceiveSlot.DEAD;
            owner.transferFailed(new IllegalStateException("protocol violation: a large-message descriptor of "
                    + len + " bytes announcing " + length + " bytes" + (largeMessages ? ""
                    : " on a connection that did not agree on large messages")));
            return;
        }
        rendezvous.arrived(slot, address, rkey, length);
    }

    @Override
    public void emit(RdmaMessage message, int len) {
        recorder.messageReceived(len);
        if (inbound.tryEmitNext(message).isFailure()) {
            message.release();
        }
    }

    /** Called by {@link ReceiveSlot#release()} from any thread. */
    void released(ReceiveSlot slot) {
        synchronized (this) {
            if (slot.state != ReceiveSlot.DELIVERED) {
                return; // released twice, concurrently: posting the buffer twice would corrupt it
            }
            boolean counted = slot.counted;
            if (tornDown || qp.isClosed()) {
                slot.state = ReceiveSlot.DEAD;
                if (counted) {
                    window.dropped();
                }
                return;
            }
            repost(slot);
            if (counted) {
                window.released();
                maybeReturnCredits();
            }
        }
    }

    /** Guarded by this. */
    private void repost(ReceiveSlot slot) {
        slot.state = ReceiveSlot.POSTED;
        recvBatch.set(0, RECV_TAG | slot.index).sge(0, 0, recvMr, (long) options.bufferSize() * slot.index,
                options.bufferSize());
        try {
            qp.postReceive(recvBatch, 1);
            outstanding(1);
        } catch (RuntimeException e) {
            slot.state = ReceiveSlot.DEAD;
        }
    }

    // ---------------------------------------------------------------- posting

    /**
     * Queues or posts an operation; the Mono ends (on the completion loop) when its work completes.
     * {@code a} and {@code b} are the immediate data (WRITE_IMM) or the atomic operands.
     */
    Mono<Object> submit(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b) {
        return submit(kind, data, local, remote, a, b, null);
    }

    /**
     * Queues or posts a {@link Kind#BIND} or {@link Kind#INVALIDATE} of a grant.
     *
     * @param kind the operation
     * @param grant the grant it is for
     * @return ends when its work completes: a bind with the window's {@link RemoteBuffer}
     */
    Mono<Object> submit(Kind kind, WindowGrant grant) {
        return submit(kind, null, null, null, 0, 0, grant);
    }

    private Mono<Object> submit(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a,
                                long b, Object subject) {
        return Mono.create(sink -> {
            if (local != null) {
                try {
                    Registration.of(local).acquire(); // returned when the device is done with it
                } catch (IllegalStateException e) {
                    sink.error(e);
                    return;
                }
            }
            synchronized (this) {
                if (closed) {
                    if (local != null) {
                        Registration.of(local).release();
                    }
                    sink.error(new IllegalStateException("the connection is closed; cannot "
                            + kind.name().toLowerCase(Locale.ROOT)));
                    return;
                }
                Object large = kind != Kind.LARGE ? subject
                        : local != null ? new LargeSend(local, sink) : new LargeSend(data, sink);
                if (pending.isEmpty() && tryPost(kind, data, local, remote, a, b, sink, large)) {
                    return;
                }
                if (needsCredit(kind) && !window.canSpend()) {
                    recorder.creditWait();
                }
                Pending p = new Pending(kind, data, local, remote, a, b, sink, large);
                pending.add(p);
                // Withdrawn if it is still queued: its buffer is never read after the cancel.
                sink.onCancel(() -> withdraw(p));
            }
        });
    }

    /** Any thread: a queued request's subscriber cancelled. Posted ones complete or fail with the connection. */
    private void withdraw(Pending p) {
        synchronized (this) {
            if (pending.removeIf(q -> q == p)) {
                forget(p);
                drainPending();
            }
        }
    }

    /** Guarded by this: a request that will never be posted gives back what it holds. */
    private void forget(Pending p) {
        if (p.large instanceof LargeSend ls) {
            rendezvous.cancelled(ls); // returns its lease too
        } else if (p.local != null) {
            Registration.of(p.local).release();
        } else if (p.kind == Kind.BIND) {
            ((WindowGrant) p.large).end(); // never bound
        }
    }

    private boolean needsCredit(Kind kind) {
        return credits && (kind == Kind.SEND || kind == Kind.WRITE_IMM || kind == Kind.LARGE);
    }

    /** {@return whether the peer agreed on large messages} */
    boolean largeMessages() {
        return largeMessages;
    }

    /** Guarded by this. */
    private void drainPending() {
        LargeReceive r;
        while ((r = reads.peek()) != null) {
            while (r.nextRead < r.length) {
                if (!tryPost(Kind.LARGE_READ, null, null, null, 0, 0, null, r)) {
                    return; // no operation free: the reads go first when one is
                }
            }
            reads.poll();
        }
        Pending p;
        while ((p = pending.peek()) != null && tryPost(p.kind, p.data, p.local, p.remote, p.a, p.b, p.sink, p.large)) {
            pending.poll();
        }
    }

    /**
     * Guarded by this. Posts the request (the fields of a {@link Pending}) if a send-queue entry, buffer and
     * credit are free; returns whether it was taken (posted, or failed to post and its sink told so).
     */
    private boolean tryPost(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                            MonoSink<Object> sink, Object large) {
        if (closed && kind != Kind.LARGE_READ) {
            return false;
        }
        if (kind == Kind.LARGE) {
            LargeSend ls = (LargeSend) large;
            if (ls.state == LargeSend.DONE) {
                return true; // its copy failed; the sink was told
            }
            if (!rendezvous.ready(ls)) {
                return false;
            }
        }
        boolean needsSendBuffer = (kind == Kind.SEND && local == null) || kind == Kind.LARGE;
        if (freeOps.isEmpty() || (needsCredit(kind) && !window.canSpend()) || (needsSendBuffer && freeSendTop == 0)) {
            return false;
        }
        Op op = freeOps.poll();
        op.kind = kind;
        op.sink = sink;
        op.lease = local != null && kind != Kind.LARGE ? Registration.of(local) : null;
        op.started = System.nanoTime();
        int flags = SIGNALED;
        int finished = 0;
        switch (kind) {
            case SEND -> {
                int len = local != null ? (int) local.length() : data.remaining();
                op.bytes = len;
                if (len <= qp.maxInlineData()) {
                    flags |= SendFlag.INLINE.value();
                }
                sendBatch.set(0, op.index, credits ? SendOpcode.SEND_WITH_IMM : SendOpcode.SEND, flags);
                if (local != null) {
                    // Zero copy: the device reads the application's registered memory (leased).
                    if (len > 0) {
                        sendBatch.sge(0, 0, local.segment().address(), len, Registration.lkeyOf(local));
                    }
                } else {
                    int slot = freeSendSlots[--freeSendTop];
                    op.sendSlot = slot;
                    long off = (long) options.bufferSize() * slot;
                    sendView(slot, off).put(0, data, data.position(), len);
                    if (len > 0) {
                        sendBatch.sge(0, 0, sendMr, off, len);
                    }
                }
                if (credits) {
                    finished = rendezvous.finishedField();
                    sendBatch.immediate(0, window.owed() | finished);
                }
            }
            case LARGE -> {
                LargeSend ls = (LargeSend) large;
                int slot = freeSendSlots[--freeSendTop];
                op.sendSlot = slot;
                op.bytes = Wire.DESCRIPTOR;
                op.sink = null; // the send completes when the peer finished reading
                op.large = ls;
                long off = (long) options.bufferSize() * slot;
                sendBuffers.set(BIG_LONG, off, ls.address);
                sendBuffers.set(BIG_INT, off + 8, ls.rkey);
                sendBuffers.set(BIG_INT, off + 12, ls.length);
                if (Wire.DESCRIPTOR <= qp.maxInlineData()) {
                    flags |= SendFlag.INLINE.value();
                }
                finished = rendezvous.finishedField();
                sendBatch.set(0, op.index, SendOpcode.SEND_WITH_IMM, flags).sge(0, 0, sendMr, off, Wire.DESCRIPTOR)
                        .immediate(0, Wire.LARGE | window.owed() | finished);
            }
            case LARGE_READ -> {
                LargeReceive r = (LargeReceive) large;
                int at = r.nextRead;
                int n = Math.min(maxRead, r.length - at);
                op.large = r;
                op.bytes = n;
                sendBatch.set(0, op.index, SendOpcode.RDMA_READ, flags).sge(0, 0, r.region, at, n)
                        .rdma(0, r.remoteAddress + at, r.rkey);
            }
            case READ -> sendBatch.set(0, op.index, SendOpcode.RDMA_READ, flags)
                    .sge(0, 0, local.segment().address(), (int) remote.length(), Registration.lkeyOf(local))
                    .rdma(0, remote.address(), remote.rkey());
            case WRITE, WRITE_IMM -> {
                sendBatch.set(0, op.index, kind == Kind.WRITE ? SendOpcode.RDMA_WRITE
                                : SendOpcode.RDMA_WRITE_WITH_IMM, flags)
                        .sge(0, 0, local.segment().address(), (int) local.length(), Registration.lkeyOf(local))
                        .rdma(0, remote.address(), remote.rkey());
                if (kind == Kind.WRITE_IMM) {
                    sendBatch.immediate(0, (int) a);
                }
            }
            case CAS, FAA -> sendBatch.set(0, op.index, kind == Kind.CAS ? SendOpcode.ATOMIC_CMP_AND_SWP
                            : SendOpcode.ATOMIC_FETCH_AND_ADD, flags)
                    .sge(0, 0, atomicMr, 8L * op.index, 8)
                    .atomic(0, remote.address(), remote.rkey(), a, b);
            case BIND -> {
                WindowGrant g = (WindowGrant) large;
                sendBatch.set(0, op.index, SendOpcode.BIND_MW, flags);
                try {
                    op.large = sendBatch.bindWindow(0, g.window, g.registration.region(), g.offset, g.length, g.access);
                } catch (RuntimeException e) {
                    finishOp(op, null, e); // checked before posting: nothing reached the QP
                    return true;
                }
            }
            case INVALIDATE -> sendBatch.set(0, op.index, SendOpcode.LOCAL_INV, flags)
                    .invalidate(0, ((WindowGrant) large).rkey());
            default -> throw new IllegalStateException(kind.toString());
        }
        try {
            qp.postSend(sendBatch, 1);
        } catch (RuntimeException e) {
            finishOp(op, null, e);
            if (large instanceof LargeSend ls) {
                rendezvous.cancelled(ls);
                ls.sink.error(e);
            } else if (large instanceof LargeReceive lr) {
                lr.nextRead = lr.length; // nothing more of it is posted
                owner.transferFailed(e); // a large message that cannot be read cannot be skipped either
            }
            return true;
        }
        outstanding(1);
        if (needsCredit(kind)) {
            window.spend();
        }
        if (credits && (kind == Kind.SEND || kind == Kind.LARGE)) {
            window.takeOwed();
            rendezvous.finishedSent(finished);
        }
        if (kind == Kind.LARGE) {
            rendezvous.posted((LargeSend) large);
        } else if (kind == Kind.LARGE_READ) {
            LargeReceive r = (LargeReceive) large;
            r.nextRead += op.bytes;
        }
        return true;
    }

    /** Guarded by this. The view of send buffer {@code slot} (at {@code offset}); see {@link #sendViews}. */
    private ByteBuffer sendView(int slot, long offset) {
        ByteBuffer v = sendViews[slot];
        if (v == null) {
            v = sendBuffers.asSlice(offset, options.bufferSize()).asByteBuffer();
            sendViews[slot] = v;
        }
        return v;
    }

    /** Guarded by this. Returns credits with a control message when no data send will carry them soon. */
    private void maybeReturnCredits() {
        if (credits && !closed && (window.controlDue(!pending.isEmpty())
                || (rendezvous.finishedOwed() > 0 && !window.controlInFlight()))) {
            postControl(Kind.CONTROL);
        }
    }

    /**
     * CM loop: starts the orderly close (credits protocol): refuses new sends and posts the CLOSE
     * message, whose completion lets the connection disconnect, so the peer reads it before the DREQ.
     *
     * @return whether the close message was posted
     */
    boolean sendClose() {
        closed = true;
        if (!credits) {
            return false;
        }
        synchronized (this) {
            return postControl(Kind.CLOSE);
        }
    }

    /** Guarded by this. A zero-length SEND_WITH_IMM carrying credits (and the close flag). */
    private boolean postControl(Kind kind) {
        Op op = freeOps.poll();
        if (op == null) {
            return false;
        }
        int finished = rendezvous.finishedField();
        int imm = Wire.CONTROL | (kind == Kind.CLOSE ? Wire.CLOSE : 0) | finished | window.owed();
        op.kind = kind;
        op.started = System.nanoTime();
        sendBatch.set(0, op.index, SendOpcode.SEND_WITH_IMM, SIGNALED).immediate(0, imm);
        try {
            qp.postSend(sendBatch, 1);
        } catch (RuntimeException e) {
            op.kind = null;
            freeOps.push(op);
            return false;
        }
        outstanding(1);
        rendezvous.finishedSent(finished);
        if (kind == Kind.CONTROL) {
            window.controlSent();
        } else {
            window.takeOwed();
        }
        return true;
    }

    /** Guarded by this. */
    private void finishOp(Op op, Object result, Throwable error) {
        if (op.sendSlot >= 0) {
            freeSendSlots[freeSendTop++] = op.sendSlot;
            op.sendSlot = -1;
        }
        MonoSink<Object> s = op.sink;
        op.sink = null;
        op.kind = null;
        op.large = null;
        if (op.lease != null) {
            op.lease.release();
            op.lease = null;
        }
        freeOps.push(op);
        if (s != null) {
            if (error != null) {
                s.error(error);
            } else {
                s.success(result);
            }
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
        closed = true;
        loop.execute(() -> {
            Throwable end = cause;
            if (registered) {
                drain.finalDrain();
                loop.unregister(cq);
                registered = false;
            }
            tornDown = true;
            keepalive.stop();
            if (end == null && remoteClose && credits && !peerClosed) {
                end = new RdmaCmException.Disconnected(Step.TRANSFER,
                        "the peer disconnected without an orderly close (did its process die?)");
            }
            Throwable opFailure = end != null ? end : new IllegalStateException("connection closed");
            synchronized (this) {
                failAllOps(opFailure);
            }
            if (end != null) {
                inbound.tryEmitError(end);
            } else {
                inbound.tryEmitComplete();
            }
            after.accept(end);
        });
    }

    /** Guarded by this. */
    private void failAllOps(Throwable cause) {
        rendezvous.close(cause);
        for (Op op : ops) {
            if (op.sink != null) {
                MonoSink<Object> s = op.sink;
                op.sink = null;
                s.error(cause);
            }
        }
        Pending p;
        while ((p = pending.poll()) != null) {
            forget(p);
            if (p.sink != null) {
                p.sink.error(cause);
            }
        }
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
        synchronized (this) {
            for (Op op : ops) {
                if (op.lease != null) {
                    op.lease.release();
                    op.lease = null;
                }
            }
        }
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
    public Object monitor() {
        return this;
    }

    @Override
    public void postRead(LargeReceive message) {
        reads.add(message);
        drainPending();
    }

    @Override
    public void resume() {
        synchronized (this) {
            drainPending();
        }
    }

    @Override
    public void fail(Throwable cause) {
        owner.transferFailed(cause);
    }

    @Override
    public void releaseSlot(ReceiveSlot slot) {
        released(slot);
    }
}
