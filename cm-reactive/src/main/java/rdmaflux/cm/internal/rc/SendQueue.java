package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.memory.BufferSlabs;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.internal.memory.Registration;
import rdmaflux.cm.internal.memory.SendBuffers;

import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Locale;
import java.util.function.IntConsumer;

import reactor.core.publisher.MonoSink;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;

/**
 * The send side of one RC connection: the table of posted send-queue operations ({@link SendEntry}), requests
 * waiting for an entry, a send buffer ({@link SendBuffers}) or a credit, and writing each operation's work
 * request into the batch that {@link SendBatches} posts. Each operation's {@link MonoSink} is told when its
 * work completes.
 *
 * <p>Threads: application threads submit, the completion loop completes, the CM loop closes; all state
 * is guarded by the connection's lock ({@link ConnectionLock}, {@link RcQueue}'s, shared with its receive side because the
 * {@link CreditWindow} and the {@link Rendezvous} belong to both).
 */
public final class SendQueue {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    /**
     * At most this many sends in a row go unsignaled, so that a long batch gives its send buffers back in
     * parts (a stream's window is the send buffers: half of the default 32).
     */
    static final int SIGNAL_INTERVAL = 16;
    /**
     * A large message is read in pieces of at most this, or the port's largest message if smaller (1 GiB
     * on some NICs), so any message size works on any device.
     */
    static final int READ_PIECE = 64 << 20;
    private final ConnectionLock lock;
    private final QueuePair qp;
    private final RdmaRecorder recorder;
    private final QueueOwner owner;
    private final CreditWindow window;
    private final Rendezvous rendezvous;
    private final boolean credits;
    private final int maxRead;
    /** Whether operations' latencies are recorded: not with {@link RdmaRecorder#NOOP}, so no clock is read. */
    private final boolean timed;

    private final SendBuffers buffers;
    private final SendEntry[] ops;
    private final ArrayDeque<SendEntry> freeOps = new ArrayDeque<>();
    private final WaitingRequests pending;
    private final SendBatches batches;
    /**
     * The operations written and not finished, in order. Plain sends are written unsignaled; the last
     * request of each batch is signaled as it is sealed, and its completion finishes every operation before
     * it here.
     */
    private final PostedOrder posted;
    private final IntConsumer retireEarlier = this::retiredEarlier;
    private final IntConsumer outstanding;
    /** Sends written unsignaled since the last signaled request or seal. */
    private int unsignaled;
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
              RdmaRecorder recorder, QueueOwner owner, CreditWindow window, Rendezvous rendezvous,
              boolean credits, int maxRead, IntConsumer outstanding) {
        this.lock = lock;
        this.qp = qp;
        this.recorder = recorder;
        this.owner = owner;
        this.window = window;
        this.rendezvous = rendezvous;
        this.credits = credits;
        this.maxRead = maxRead;
        this.timed = recorder != RdmaRecorder.NOOP;
        this.outstanding = outstanding;
        ops = new SendEntry[qp.maxSendWr()];
        posted = new PostedOrder(ops.length);
        buffers = new SendBuffers(slabs, arena, options.bufferSize(), options.sendBuffers(), ops.length);
        for (int i = 0; i < ops.length; i++) {
            ops[i] = new SendEntry(i);
            freeOps.add(ops[i]);
        }
        batches = new SendBatches(lock, qp, ops.length, outstanding, this::refused);
        pending = new WaitingRequests(lock, rendezvous, this::tryPost);
    }

    /** Refuses new operations from now on; any thread. */
    public void closeForSends() {
        closed = true;
    }

    /** {@return whether new operations are refused} */
    public boolean closedForSends() {
        return closed;
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
            retireBefore(index); // completions come in order: what was posted before it succeeded
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
            retireBefore(index);
            SendEntry op = ops[index];
            OpKind kind = op.kind;
            if (kind == OpKind.LARGE_READ) {
                LargeReceive r = (LargeReceive) op.large;
                r.bytesRead += op.bytes;
                if (r.bytesRead == r.length) {
                    read = r; // its last piece
                }
            }
            finishOp(op, op.completed(recorder, buffers), null);
            if (read == null) {
                drainPending();
            }
        } finally {
            lock.unlock();
        }
        if (read != null) {
            rendezvous.readDone(read); // delivers it and what waited behind it, once the op is finished
            lock.lock();
            try {
                drainPending();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Guarded by the lock: the operations written before operation {@code index}, which a completion of it
     * (success or failure) follows, finished successfully ({@link PostedOrder#retireThrough}).
     */
    private void retireBefore(int index) {
        posted.retireThrough(index, retireEarlier);
    }

    /** Guarded by the lock: an unsignaled send that a later completion retired. */
    private void retiredEarlier(int k) {
        SendEntry op = ops[k];
        outstanding.accept(-1);
        if (op.kind != null) {
            finishOp(op, op.completed(recorder, buffers), null);
        }
    }

    /** Guarded by the lock: {@code op}'s request was written at the end of the batch; it is posted in order. */
    private boolean written(SendEntry op) {
        posted.add(op.index);
        return batches.added(op);
    }

    /**
     * Guarded by the lock: a large message's pieces are read as operations become free.
     *
     * @param message the message to read
     */
    void postRead(LargeReceive message) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        pending.addRead(message);
        drainPending();
    }

    /**
     * Any thread: queues or posts an operation and tells {@code sink} when its work completes (on the
     * completion loop, under this queue's lock: the sink must only record and hand over). A queued one is
     * withdrawn by the {@code Disposable} it gives {@link MonoSink#onCancel}. Takes the lock: a sender is
     * the one thread of the data path that waits for it (handing the request over instead would cost an
     * object per message, since the lock is often held while completions are handled).
     */
    public void enqueue(OpKind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                        Object subject, MonoSink<Object> sink) {
        if (local != null) {
            try {
                Registration.of(local).acquire(); // returned when the device is done with it
            } catch (IllegalStateException e) { // closed, maybe by this connection's end: then that end says why
                sink.error(closed && owner.failure() != null ? owner.failure() : e);
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
            Object large = kind != OpKind.LARGE ? subject
                    : local != null ? new LargeSend(local, sink) : new LargeSend(data, sink);
            if (pending.isEmpty() && tryPost(kind, data, local, remote, a, b, sink, large)) {
                return;
            }
            if (needsCredit(kind) && !window.canSpend()) {
                recorder.creditWait();
            }
            // Withdrawn if it is still queued: its buffer is never read after the cancel (queued first, so a
            // cancel that came before finds it).
            if (kind == OpKind.SEND && local == null && sink instanceof QueueSink.Message m) {
                pending.add(m);
                m.waiting(this);
            } else {
                WaitingRequest.Pending p = new WaitingRequest.Pending(this, kind, data, local, remote, a, b, sink, large);
                pending.add(p);
                sink.onCancel(p);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Any thread: a waiting request's subscriber cancelled. Posted ones complete or fail with the connection. */
    void withdraw(WaitingRequest p) {
        lock.lock();
        try {
            if (pending.withdraw(p)) {
                drainPending();
            }
        } finally {
            lock.unlock();
        }
    }

    private boolean needsCredit(OpKind kind) {
        return credits && (kind == OpKind.SEND || kind == OpKind.WRITE_IMM || kind == OpKind.LARGE);
    }

    /** Guarded by the lock: posts what waited ({@link WaitingRequests#drain()}). */
    void drainPending() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        pending.drain();
    }

    /**
     * Guarded by the lock. Writes the request (the fields of a {@link WaitingRequest}) into the batch that the
     * lock's holder posts as it lets go ({@link SendBatches}), if a send-queue entry, buffer and credit are
     * free; returns whether it was taken (written, or refused and its sink told so).
     */
    private boolean tryPost(OpKind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                            MonoSink<Object> sink, Object large) {
        if (closed && kind != OpKind.LARGE_READ) {
            return false;
        }
        if (kind == OpKind.LARGE) {
            LargeSend ls = (LargeSend) large;
            if (ls.state == LargeSend.DONE) {
                return true; // its copy failed; the sink was told
            }
            if (!rendezvous.ready(ls)) {
                return false;
            }
        }
        boolean needsSendBuffer = (kind == OpKind.SEND && local == null) || kind == OpKind.LARGE;
        if (freeOps.isEmpty() || (needsCredit(kind) && !window.canSpend()) || (needsSendBuffer && !buffers.available())) {
            return false;
        }
        SendEntry op = freeOps.poll();
        op.kind = kind;
        op.sink = sink;
        op.lease = local != null && kind != OpKind.LARGE ? Registration.of(local) : null;
        op.started = timed ? System.nanoTime() : SendEntry.UNTIMED;
        if (kind == OpKind.BIND) {
            batches.flushNow(); // a bind is posted alone: its window is checked and committed per post
        }
        SendRequests sendBatch = batches.requests();
        int w = batches.size();
        // A send is signaled as its batch's end (SendBatches#seal) or as every SIGNAL_INTERVAL-th in a row.
        int flags = kind == OpKind.SEND && ++unsignaled < SIGNAL_INTERVAL ? 0 : SIGNALED;
        if (flags == SIGNALED) {
            unsignaled = 0;
        }
        int finished = 0;
        switch (kind) {
            case SEND -> {
                finished = credits ? rendezvous.finishedField() : 0;
                RuntimeException e = op.writeSend(sendBatch, w, flags, data, local, sink, buffers, qp.maxInlineData(),
                        credits, window.owed() | finished);
                if (e != null) {
                    finishOp(op, null, e); // a MessageWriter's failure: the message fails, nothing was posted
                    return true;
                }
            }
            case LARGE -> {
                finished = rendezvous.finishedField();
                op.writeDescriptor(sendBatch, w, flags, (LargeSend) large, buffers, qp.maxInlineData(),
                        Wire.LARGE | window.owed() | finished);
            }
            case LARGE_READ -> op.writeReadPiece(sendBatch, w, flags, (LargeReceive) large, maxRead);
            default -> {
                try {
                    op.writeOneSided(sendBatch, w, flags, local, remote, a, b, large, buffers);
                } catch (RuntimeException e) {
                    finishOp(op, null, e); // a bind's window is checked before posting: nothing reached the QP
                    return true;
                }
            }
        }
        boolean full = written(op);
        if (needsCredit(kind)) {
            window.spend();
        }
        if (credits && (kind == OpKind.SEND || kind == OpKind.LARGE)) {
            window.takeOwed();
            rendezvous.finishedSent(finished);
        }
        if (kind == OpKind.LARGE) {
            rendezvous.posted((LargeSend) large);
        } else if (kind == OpKind.LARGE_READ) {
            LargeReceive r = (LargeReceive) large;
            r.nextRead += op.bytes;
        }
        if (full || kind == OpKind.BIND) {
            batches.flushNow();
        }
        return true;
    }

    /** Guarded by the lock, as its holder lets go: see {@link SendBatches#seal()}. */
    boolean seal() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        unsignaled = 0; // the batch's last request is signaled now
        return batches.seal();
    }

    /** After the holder let go, when {@link #seal()} returned true: see {@link SendBatches#postSealed()}. */
    void postSealed() {
        batches.postSealed();
    }

    /** {@return whether requests were left written for a post that has ended since; any thread} */
    boolean leftWritten() {
        return batches.leftWritten();
    }

    /**
     * Any thread, without the lock: the device refused a post. Fails the requests it did not take, and the
     * connection unless it is closing anyway.
     */
    private void refused(SendEntry[] refused, RuntimeException failure) {
        lock.lock();
        try {
            for (SendEntry op : refused) {
                posted.remove(op.index); // it will not complete
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

    /** {@return the operation of entry {@code index}, or null when it is free; guarded by the lock} */
    OpKind kind(int index) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        return ops[index].kind;
    }

    /** {@return whether requests wait for an entry, a buffer or a credit; guarded by the lock} */
    boolean requestsWaiting() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        return !pending.isEmpty();
    }

    /** {@return a free entry for a {@link ControlMessages control message}, or null; guarded by the lock} */
    SendEntry freeEntry() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        return freeOps.poll();
    }

    /**
     * Guarded by the lock: writes the control message {@code op} (a zero-length, signaled
     * {@code SEND_WITH_IMM}) at the end of the batch.
     *
     * @return whether the batch is full and must be posted now
     */
    boolean writeControl(SendEntry op, OpKind kind, int imm) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        op.kind = kind;
        op.started = timed ? System.nanoTime() : SendEntry.UNTIMED;
        int w = batches.size();
        batches.requests().set(w, op.index, SendOpcode.SEND_WITH_IMM, SIGNALED).immediate(w, imm);
        return written(op);
    }

    /** Guarded by the lock: posts the batch written so far now. */
    void flushNow() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        batches.flushNow();
    }

    /** Guarded by the lock. */
    private void finishOp(SendEntry op, Object result, Throwable error) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        if (op.sendSlot >= 0) {
            buffers.free(op.sendSlot);
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
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        for (SendEntry op : ops) {
            if (op.sink != null) {
                MonoSink<Object> s = op.sink;
                op.sink = null;
                s.error(cause);
            }
        }
        pending.failAll(cause);
    }

    /** CM loop, after the QP is destroyed: gives the send buffers and atomic words back to their slabs (idempotent). */
    void closeRegions() {
        buffers.close();
    }

    /** After the QP is destroyed: the registrations operations never completed with are free again. */
    void releaseLeases() {
        lock.lock();
        try {
            for (SendEntry op : ops) {
                if (op.lease != null) {
                    op.lease.release();
                    op.lease = null;
                }
            }
        } finally {
            lock.unlock();
        }
    }

}
