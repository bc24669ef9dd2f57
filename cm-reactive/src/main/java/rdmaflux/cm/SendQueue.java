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
 * is guarded by the connection's lock ({@link ConnectionLock}, {@link RcQueue}'s, shared with its receive side because the
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
    /** The most requests posted with one doorbell. */
    private static final int MAX_BATCH = 32;

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

    private final ConnectionLock lock;
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
    /** The blocks of {@link #sendMr} and {@link #atomicMr} (slabs of the loops' domain), at these offsets. */
    private final BufferSlabs.Block sendBlock;
    private final BufferSlabs.Block atomicBlock;
    private final long sendBase;
    private final long atomicBase;
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
    /**
     * The requests written under the lock and not posted yet. The holder seals them as it lets go of the
     * lock ({@link #seal()}) and posts them with one {@code ibv_post_send} (one doorbell; on Soft-RoCE one
     * system call, in which the kernel also transmits) just after ({@link #postSealed()}), so the lock is
     * not held during the call. Two batches take turns: the next holder writes the other one meanwhile.
     */
    private SendRequests sendBatch;
    /** The operation of each request in {@link #sendBatch}. */
    private Op[] batchOps;
    /** How many requests {@link #sendBatch} holds; guarded by the lock. */
    private int batched;
    private final SendRequests[] batches = new SendRequests[2];
    private final Op[][] batchOpsOf = new Op[2][];
    /**
     * Whether a sealed batch is being posted: one at a time, so batches leave in the order they were
     * sealed. Set by {@link #seal()} under the lock, cleared by {@link #postSealed()}; nobody waits for it.
     */
    private final java.util.concurrent.atomic.AtomicBoolean posting = new java.util.concurrent.atomic.AtomicBoolean();
    /**
     * Set by a holder that found a post in progress and left its requests written: the poster (or, if it
     * finished meanwhile, the next holder) seals them.
     */
    private volatile boolean leftWritten;
    // Written by the thread that set posting, read by it in postSealed: the sealed batch.
    private SendRequests sealed;
    private Op[] sealedOps;
    private int sealedCount;
    private volatile boolean closed;

    /**
     * CM loop: carves the send buffers and atomic result words from {@code slabs} (the loops' shared domain:
     * {@link #closeRegions()} frees them; on failure here, what was carved is freed before the throw).
     *
     * @param lock the connection's lock, which guards this
     * @param maxRead the largest piece of a large message read at once
     * @param outstanding told of each posted (+1) and completed (-1) work request
     */
    SendQueue(ConnectionLock lock, BufferSlabs slabs, QueuePair qp, Arena arena, ConnectionOptions options,
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
        sendBlock = slabs.carve(arena, (long) options.bufferSize() * options.sendBuffers());
        sendBuffers = sendBlock.memory();
        sendMr = sendBlock.region();
        sendBase = sendBlock.offset();
        ops = new Op[qp.maxSendWr()];
        try {
            atomicBlock = slabs.carve(arena, 8L * ops.length);
        } catch (RuntimeException | Error e) {
            sendBlock.free();
            throw e;
        }
        atomics = atomicBlock.memory();
        atomicMr = atomicBlock.region();
        atomicBase = atomicBlock.offset();
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
        int batch = Math.min(ops.length, MAX_BATCH);
        for (int i = 0; i < 2; i++) {
            batches[i] = new SendRequests(batch, 1);
            batchOpsOf[i] = new Op[batch];
        }
        sendBatch = batches[0];
        batchOps = batchOpsOf[0];
    }

    /** Refuses new operations from now on; any thread. */
    void closeForSends() {
        closed = true;
    }

    /** {@return whether new operations are refused} */
    boolean closedForSends() {
        return closed;
    }

    /**
     * Completion loop: the keepalive probe, a control message (no credit needed) unless one is on its way.
     * Skipped when another thread holds the lock: the loop never waits for it, and a connection in use
     * needs no probe (the next tick probes again if it is idle by then).
     */
    void probe() {
        if (!lock.tryLock()) {
            return;
        }
        try {
            if (!closed && !window.controlInFlight()) {
                postControl(Kind.CONTROL);
            }
        } finally {
            lock.unlock();
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
        lock.lock();
        try {
            finishOp(ops[index], null, error);
        } finally {
            lock.unlock();
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
        lock.lock();
        try {
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
        } finally {
            lock.unlock();
        }
        if (read != null) {
            rendezvous.readDone(read); // delivers it and what waited behind it, once the op is finished
            lock.lock();
            try {
                drainPending();
                maybeReturnCredits();
            } finally {
                lock.unlock();
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
     * withdrawn by the {@code Disposable} it gives {@link MonoSink#onCancel}. Takes the lock: a sender is
     * the one thread of the data path that waits for it (handing the request over instead would cost an
     * object per message, since the lock is often held while completions are handled).
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
        lock.lock();
        try {
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
            // Withdrawn if it is still queued: its buffer is never read after the cancel (queued first, so a
            // cancel that came before finds it).
            sink.onCancel(p);
        } finally {
            lock.unlock();
        }
    }

    /** Any thread: a waiting request's subscriber cancelled. Posted ones complete or fail with the connection. */
    private void withdraw(Pending p) {
        lock.lock();
        try {
            if (pending.removeIf(q -> q == p)) {
                forget(p);
                if (p.sink instanceof Withdrawable w) {
                    w.withdrawn();
                }
                drainPending();
            }
        } finally {
            lock.unlock();
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
     * Guarded by the lock. Writes the request (the fields of a {@link Pending}) into the batch that
     * {@link #seal()} hands to {@link #postSealed()}, if a send-queue entry, buffer and credit are free; returns whether it was taken (written, or
     * refused and its sink told so).
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
        if (kind == Kind.BIND) {
            flushNow(); // a bind is posted alone: its window is checked and committed per post
        }
        int w = batched;
        int flags = SIGNALED;
        int finished = 0;
        switch (kind) {
            case SEND -> {
                int len = local != null ? (int) local.length() : data.remaining();
                op.bytes = len;
                if (len <= qp.maxInlineData()) {
                    flags |= SendFlag.INLINE.value();
                }
                sendBatch.set(w, op.index, credits ? SendOpcode.SEND_WITH_IMM : SendOpcode.SEND, flags);
                if (local != null) {
                    // Zero copy: the device reads the application's registered memory (leased).
                    if (len > 0) {
                        sendBatch.sge(w, 0, local.segment().address(), len, Registration.lkeyOf(local));
                    }
                } else {
                    int slot = freeSendSlots[--freeSendTop];
                    op.sendSlot = slot;
                    long off = (long) options.bufferSize() * slot;
                    sendView(slot, off).put(0, data, data.position(), len);
                    if (len > 0) {
                        sendBatch.sge(w, 0, sendMr, sendBase + off, len);
                    }
                }
                if (credits) {
                    finished = rendezvous.finishedField();
                    sendBatch.immediate(w, window.owed() | finished);
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
                sendBatch.set(w, op.index, SendOpcode.SEND_WITH_IMM, flags).sge(w, 0, sendMr, sendBase + off, Wire.DESCRIPTOR)
                        .immediate(w, Wire.LARGE | window.owed() | finished);
            }
            case LARGE_READ -> {
                LargeReceive r = (LargeReceive) large;
                int at = r.nextRead;
                int n = Math.min(maxRead, r.length - at);
                op.large = r;
                op.bytes = n;
                sendBatch.set(w, op.index, SendOpcode.RDMA_READ, flags).sge(w, 0, r.region, at, n)
                        .rdma(w, r.remoteAddress + at, r.rkey);
            }
            case READ -> sendBatch.set(w, op.index, SendOpcode.RDMA_READ, flags)
                    .sge(w, 0, local.segment().address(), (int) remote.length(), Registration.lkeyOf(local))
                    .rdma(w, remote.address(), remote.rkey());
            case WRITE, WRITE_IMM -> {
                sendBatch.set(w, op.index, kind == Kind.WRITE ? SendOpcode.RDMA_WRITE
                                : SendOpcode.RDMA_WRITE_WITH_IMM, flags)
                        .sge(w, 0, local.segment().address(), (int) local.length(), Registration.lkeyOf(local))
                        .rdma(w, remote.address(), remote.rkey());
                if (kind == Kind.WRITE_IMM) {
                    sendBatch.immediate(w, (int) a);
                }
            }
            case CAS, FAA -> sendBatch.set(w, op.index, kind == Kind.CAS ? SendOpcode.ATOMIC_CMP_AND_SWP
                            : SendOpcode.ATOMIC_FETCH_AND_ADD, flags)
                    .sge(w, 0, atomicMr, atomicBase + 8L * op.index, 8)
                    .atomic(w, remote.address(), remote.rkey(), a, b);
            case BIND -> {
                WindowGrant g = (WindowGrant) large;
                sendBatch.set(w, op.index, SendOpcode.BIND_MW, flags);
                try {
                    op.large = sendBatch.bindWindow(w, g.window, g.registration.region(), g.offset, g.length, g.access);
                } catch (RuntimeException e) {
                    finishOp(op, null, e); // checked before posting: nothing reached the QP
                    return true;
                }
            }
            case INVALIDATE -> sendBatch.set(w, op.index, SendOpcode.LOCAL_INV, flags)
                    .invalidate(w, ((WindowGrant) large).rkey());
            default -> throw new IllegalStateException(kind.toString());
        }
        batchOps[w] = op;
        batched = w + 1;
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
        if (batched == batchOps.length || kind == Kind.BIND) {
            flushNow();
        }
        return true;
    }

    /**
     * Guarded by the lock, as its holder lets go: seals the requests written since the last seal for
     * {@link #postSealed()} and switches to the other batch. While an earlier batch is still being posted it
     * leaves them written (the other batch is in use) and says so ({@link #leftWritten}): they leave after
     * it, sealed by its poster or the next holder. Never waits.
     *
     * @return whether there is a batch to post (then the caller must call {@link #postSealed()} once it let
     *         go of the lock)
     */
    boolean seal() {
        int n = batched;
        if (n == 0) {
            return false;
        }
        if (!posting.compareAndSet(false, true)) {
            leftWritten = true;
            if (!posting.compareAndSet(false, true)) {
                return false; // the poster finds leftWritten when it is done
            }
        }
        leftWritten = false;
        sealed = sendBatch;
        sealedOps = batchOps;
        sealedCount = n;
        batched = 0;
        int next = sendBatch == batches[0] ? 1 : 0;
        sendBatch = batches[next];
        batchOps = batchOpsOf[next];
        return true;
    }

    /**
     * By the thread whose {@link #seal()} returned true, not holding the lock: posts the sealed batch as one
     * chain. A post that fails (the QP is closed or in the error state: the queue never writes more than it
     * has room for) fails the requests the device did not take, and the connection.
     */
    void postSealed() {
        SendRequests b = sealed;
        Op[] batchedOps = sealedOps;
        int n = sealedCount;
        sealed = null;
        sealedOps = null;
        sealedCount = 0;
        int posted = n;
        RuntimeException failure = null;
        Op[] refused = null;
        try {
            try {
                qp.postSend(b, n);
            } catch (RuntimeException e) {
                failure = e;
                posted = b.lastPosted();
                refused = java.util.Arrays.copyOfRange(batchedOps, posted, n);
            }
            outstanding(posted);
            java.util.Arrays.fill(batchedOps, 0, n, null);
        } finally {
            posting.set(false);
        }
        if (leftWritten && lock.tryLock()) {
            lock.unlock(); // seals and posts what a holder wrote meanwhile (else that holder or the next does)
        }
        if (failure != null) {
            lock.lock();
            try {
                for (Op op : refused) {
                    Object large = op.large;
                    finishOp(op, null, failure);
                    if (large instanceof LargeReceive lr) {
                        lr.nextRead = lr.length; // nothing more of it is posted
                    }
                }
                if (!closed) {
                    // Large sends already counted as posted fail with the connection (Rendezvous.close).
                    owner.transferFailed(failure);
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Guarded by the lock: posts what was written now, without letting go (a close, a bind, a full batch);
     * after the post in progress, if there is one (it does not need the lock).
     */
    private void flushNow() {
        while (batched > 0) {
            if (seal()) {
                postSealed();
                return;
            }
            Thread.yield();
        }
    }

    /** {@return whether requests were left written for a post that has ended since; any thread} */
    boolean leftWritten() {
        return leftWritten && !posting.get();
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
        lock.lock();
        try {
            return postControl(Kind.CLOSE);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Guarded by the lock. A zero-length SEND_WITH_IMM carrying credits (and the close flag), posted with the
     * batch; the close message at once, so the caller knows whether it left.
     */
    private boolean postControl(Kind kind) {
        Op op = freeOps.poll();
        if (op == null) {
            return false;
        }
        int finished = rendezvous.finishedField();
        int imm = Wire.CONTROL | (kind == Kind.CLOSE ? Wire.CLOSE : 0) | finished | window.owed();
        op.kind = kind;
        op.started = System.nanoTime();
        int w = batched;
        sendBatch.set(w, op.index, SendOpcode.SEND_WITH_IMM, SIGNALED).immediate(w, imm);
        batchOps[w] = op;
        batched = w + 1;
        rendezvous.finishedSent(finished);
        if (kind == Kind.CONTROL) {
            window.controlSent();
        } else {
            window.takeOwed();
        }
        if (kind == Kind.CLOSE || batched == batchOps.length) {
            flushNow();
            return op.kind == kind; // a request the device refused was finished (and its kind cleared)
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

    /** CM loop, after the QP is destroyed: the send buffers and atomic words go back to their slabs (idempotent). */
    void closeRegions() {
        sendBlock.free();
        atomicBlock.free();
    }

    /** After the QP is destroyed: the registrations operations never completed with are free again. */
    void releaseLeases() {
        lock.lock();
        try {
            for (Op op : ops) {
                if (op.lease != null) {
                    op.lease.release();
                    op.lease = null;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void outstanding(int delta) {
        outstanding.accept(delta);
    }
}
