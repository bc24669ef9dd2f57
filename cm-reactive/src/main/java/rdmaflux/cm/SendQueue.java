package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Locale;
import java.util.function.IntConsumer;

import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import rdmaflux.cm.RcQueue.Kind;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;

/**
 * The send side of one RC connection: the table of posted send-queue operations, the registered send
 * buffers and atomic result words, requests waiting for an entry, a buffer or a credit, and posting.
 * Each operation's {@link MonoSink} is told when its work completes.
 *
 * <p>Threads: application threads submit, the completion loop completes, the CM loop closes; all state
 * is guarded by the connection's monitor ({@link RcQueue}'s, shared with its receive side because the
 * {@link CreditWindow} and the {@link Rendezvous} belong to both).
 */
final class SendQueue {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final ValueLayout.OfLong BIG_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BIG_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    /**
     * A large message is read in pieces of at most this, or the port's largest message if smaller (1 GiB
     * on some NICs), so any message size works on any device.
     */
    static final int READ_PIECE = 64 << 20;

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
    private record Pending(SendQueue queue, Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote,
                           long a, long b, MonoSink<Object> sink, Object large) implements reactor.core.Disposable {
        /** Withdraws this request if it is still queued: its own {@code Disposable}, not one more object. */
        @Override
        public void dispose() {
            queue.withdraw(this);
        }
    }

    private final Object lock;
    private final QueuePair qp;
    private final ConnectionOptions options;
    private final RdmaRecorder recorder;
    private final RcQueue.Owner owner;
    private final CreditWindow window;
    private final Rendezvous rendezvous;
    private final boolean credits;
    private final IntConsumer outstanding;
    private final int maxRead;

    private final MemoryRegion sendMr;
    private final MemoryRegion atomicMr;
    private final MemorySegment sendBuffers;
    private final MemorySegment atomics;
    private final Op[] ops;
    private final ArrayDeque<Op> freeOps = new ArrayDeque<>();
    private final int[] freeSendSlots;
    private int freeSendTop;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /** Large messages with pieces left to read once an operation is free. */
    private final ArrayDeque<LargeReceive> reads = new ArrayDeque<>();
    /**
     * Per send buffer slot, a ByteBuffer view of its memory, made on the slot's first use: copying a
     * message in through it allocates nothing (MemorySegment.ofBuffer would wrap each message).
     */
    private final ByteBuffer[] sendViews;
    private final SendRequests sendBatch = new SendRequests(1, 1);
    private volatile boolean closed;

    /**
     * CM loop: registers the send buffers and atomic result words in {@code pd} (the loops' shared domain:
     * {@link #closeRegions()} frees them; on failure here, what was registered is closed before the throw).
     *
     * @param lock the connection's monitor, which guards this
     * @param maxRead the largest piece of a large message read at once
     * @param outstanding told of each posted (+1) and completed (-1) work request
     */
    SendQueue(Object lock, ProtectionDomain pd, QueuePair qp, Arena arena, ConnectionOptions options,
              RdmaRecorder recorder, RcQueue.Owner owner, CreditWindow window, Rendezvous rendezvous,
              boolean credits, int maxRead, IntConsumer outstanding) {
        this.lock = lock;
        this.qp = qp;
        this.options = options;
        this.recorder = recorder;
        this.owner = owner;
        this.window = window;
        this.rendezvous = rendezvous;
        this.credits = credits;
        this.maxRead = maxRead;
        this.outstanding = outstanding;
        sendBuffers = RcQueue.allocate(arena, (long) options.bufferSize() * options.sendBuffers(), 64);
        sendMr = pd.register(sendBuffers);
        ops = new Op[qp.maxSendWr()];
        try {
            atomics = RcQueue.allocate(arena, 8L * ops.length, 8);
            atomicMr = pd.register(atomics);
        } catch (RuntimeException | Error e) {
            sendMr.close();
            throw e;
        }
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
    }

    /** Refuses new operations from now on; any thread. */
    void closeForSends() {
        closed = true;
    }

    /** {@return whether new operations are refused} */
    boolean closedForSends() {
        return closed;
    }

    /** Completion loop: the keepalive probe, a control message (no credit needed) unless one is on its way. */
    void probe() {
        synchronized (lock) {
            if (!closed && !window.controlInFlight()) {
                postControl(Kind.CONTROL);
            }
        }
    }

    // ---------------------------------------------------------------- completions (completion loop)

    /**
     * Completion loop: the work request of operation {@code index} failed.
     *
     * @param index the operation (its work request id)
     * @param error what its sink is told
     */
    void failed(int index, Throwable error) {
        synchronized (lock) {
            finishOp(ops[index], null, error);
        }
    }

    /**
     * Completion loop: the work request of operation {@code index} succeeded; its sink gets the result,
     * and what waited for the entry, buffer or credit it held is posted.
     *
     * @param index the operation (its work request id)
     */
    void completed(int index) {
        LargeReceive read = null;
        synchronized (lock) {
            Op op = ops[index];
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
            synchronized (lock) {
                drainPending();
                maybeReturnCredits();
            }
        }
    }

    /**
     * Guarded by the lock: a large message's pieces are read as operations become free.
     *
     * @param message the message to read
     */
    void postRead(LargeReceive message) {
        reads.add(message);
        drainPending();
    }

    /**
     * Queues or posts a {@link Kind#BIND} or {@link Kind#INVALIDATE} of a grant.
     *
     * @param kind the operation
     * @param grant the grant it is for
     * @return ends when its work completes: a bind with the window's {@link RemoteBuffer}
     */
    Mono<Object> submit(Kind kind, WindowGrant grant) {
        return Mono.create(sink -> enqueue(kind, null, null, null, 0, 0, grant, sink));
    }

    /**
     * Any thread: queues or posts an operation and tells {@code sink} when its work completes (on the
     * completion loop, under this queue's lock: the sink must only record and hand over). A queued one is
     * withdrawn by the {@code Disposable} it gives {@link MonoSink#onCancel}.
     */
    void enqueue(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                 Object subject, MonoSink<Object> sink) {
        if (local != null) {
            try {
                Registration.of(local).acquire(); // returned when the device is done with it
            } catch (IllegalStateException e) {
                sink.error(e);
                return;
            }
        }
        synchronized (lock) {
            if (closed) {
                if (local != null) {
                    Registration.of(local).release();
                }
                Throwable f = owner.failure(); // a failed connection refuses with its failure
                sink.error(f != null ? f : new IllegalStateException("the connection is closed; cannot "
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
            Pending p = new Pending(this, kind, data, local, remote, a, b, sink, large);
            pending.add(p);
            // Withdrawn if it is still queued: its buffer is never read after the cancel.
            sink.onCancel(p);
        }
    }

    /** Any thread: a queued request's subscriber cancelled. Posted ones complete or fail with the connection. */
    private void withdraw(Pending p) {
        synchronized (lock) {
            if (pending.removeIf(q -> q == p)) {
                forget(p);
                if (p.sink instanceof Withdrawable w) {
                    w.withdrawn();
                }
                drainPending();
            }
        }
    }

    /**
     * A sink that wants to know when its request was withdrawn (a cancelled {@code Mono}'s sink is not told:
     * nobody listens any more). Told under this queue's lock: it must only record and hand over.
     */
    interface Withdrawable {
        /** The request was taken off the queue before it was posted: no completion will come. */
        void withdrawn();
    }

    /**
     * A sink made for this queue rather than by {@code Mono.create}: the queue never registers demand or
     * disposal callbacks, only {@link MonoSink#onCancel} to withdraw a queued request.
     */
    interface QueueSink extends MonoSink<Object> {
        @Override
        default MonoSink<Object> onRequest(java.util.function.LongConsumer consumer) {
            return this;
        }

        @Override
        default MonoSink<Object> onDispose(reactor.core.Disposable d) {
            return this;
        }
    }

    /** Guarded by the lock: a request that will never be posted gives back what it holds. */
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

    /** Guarded by the lock: posts what waited, large-message reads first. */
    void drainPending() {
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
     * Guarded by the lock. Posts the request (the fields of a {@link Pending}) if a send-queue entry, buffer and
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

    /** Guarded by the lock. The view of send buffer {@code slot} (at {@code offset}); see {@link #sendViews}. */
    private ByteBuffer sendView(int slot, long offset) {
        ByteBuffer v = sendViews[slot];
        if (v == null) {
            v = sendBuffers.asSlice(offset, options.bufferSize()).asByteBuffer();
            sendViews[slot] = v;
        }
        return v;
    }

    /** Guarded by the lock. Returns credits with a control message when no data send will carry them soon. */
    void maybeReturnCredits() {
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
        synchronized (lock) {
            return postControl(Kind.CLOSE);
        }
    }

    /** Guarded by the lock. A zero-length SEND_WITH_IMM carrying credits (and the close flag). */
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

    /** Guarded by the lock. */
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

    /** Guarded by the lock: every unfinished operation and queued request fails with {@code cause}. */
    void failAll(Throwable cause) {
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

    /** CM loop, after the QP is destroyed: deregisters the send buffers and atomic words (idempotent). */
    void closeRegions() {
        sendMr.close();
        atomicMr.close();
    }

    /** After the QP is destroyed: the registrations operations never completed with are free again. */
    void releaseLeases() {
        synchronized (lock) {
            for (Op op : ops) {
                if (op.lease != null) {
                    op.lease.release();
                    op.lease = null;
                }
            }
        }
    }

    private void outstanding(int delta) {
        outstanding.accept(delta);
    }
}
