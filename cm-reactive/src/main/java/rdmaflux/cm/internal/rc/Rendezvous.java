package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.internal.memory.BufferSlabs;
import rdmaflux.cm.internal.memory.Registration;
import rdmaflux.cm.internal.memory.Registrations;
import rdmaflux.cm.Step;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import reactor.core.scheduler.Scheduler;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.ProtectionDomain;

/**
 * Large messages of one connection (wire version 2, docs/protocol.md): a message larger than the peer's
 * receive buffers is registered where it is when it is off-heap (no copy), or else copied once into
 * registered memory on the sender; it is announced by a 16-byte
 * descriptor that travels as an ordinary data SEND (so it keeps its place among small messages and
 * takes a credit), RDMA-READ by the receiver straight into registered memory (a slab block for a message of at most
 * {@link BufferSlabs#MAX_BLOCK}, else a region registered for it), and delivered
 * as one {@link RdmaMessage}. The receiver tells the sender how many of its large messages it finished
 * reading in bits 16-28 of the immediate data of its next SEND or control message; each completes the
 * oldest posted large send and frees its copy.
 *
 * <p>Memory is bounded on both sides by {@link ConnectionOptions#largeMessageBudget()}: a sender copies
 * a large message only when the bytes of its large messages not yet read fit the budget, a receiver
 * reads one only when the bytes of large messages it holds (being read, or delivered and not released)
 * fit it. A single message larger than the budget goes alone. A receiver that does not release slows
 * the sender twice over: its descriptor slots hold credits, and its full budget stops reads, so the
 * sender's copies stay unread and its budget full.
 *
 * <p>Threads: the owning {@link RcQueue}'s lock ({@link ConnectionLock}) guards the fields marked so; {@link #ordered} belongs
 * to the completion loop; a worker ({@link Port#worker()}) copies, allocates and registers, which can
 * take milliseconds for large messages and so never runs on a loop. A message of at most
 * {@link BufferSlabs#MAX_BLOCK} that finds a free block in a slab already registered is read at once by
 * the thread that admits it (the completion loop, or one releasing a message): that takes no registration.
 */
public final class Rendezvous {
    /** What the queue provides. */
    interface Port {
        /** {@return where copies and registrations run} */
        Scheduler worker();

        /** {@return the protection domain the regions are registered in} */
        ProtectionDomain pd();

        /** {@return the registration cache of {@link #pd()}} */
        Registrations registrations();

        /** {@return the lock that guards the queue and this} */
        ConnectionLock lock();

        /**
         * Under the lock: posts the RDMA READ of a large message, now or as soon as an operation is free.
         *
         * @param message the message to read
         */
        void postRead(LargeReceive message);

        /** Any thread, not holding the lock: a queued large send may be postable now. */
        void resume();

        /**
         * Completion loop: hands a message to the application, in order.
         *
         * @param message a small message's slot or a large message
         * @param length its length
         */
        void emit(RdmaMessage message, int length);

        /**
         * Any thread: the connection fails.
         *
         * @param cause why
         */
        void fail(Throwable cause);

        /**
         * Any thread: gives a descriptor's receive slot back (its credit returns to the peer).
         *
         * @param slot the slot
         */
        void releaseSlot(ReceiveSlot slot);
    }

    private final Port port;
    private final long budget;
    /** The application's memory for large messages, or {@code null}: see {@link ConnectionOptions#largeMessageMemory()}. */
    private final java.util.function.IntFunction<MemorySegment> memory;

    // Send side, guarded by the lock.
    private long sendBytes;
    private final ArrayDeque<LargeSend> posted = new ArrayDeque<>();
    private final List<LargeSend> preparing = new ArrayList<>();

    // Receive side, guarded by the lock.
    private long receiveBytes;
    private final ArrayDeque<LargeReceive> waiting = new ArrayDeque<>();
    /** Large messages not yet handed to the application: freed here if the connection ends first. */
    private final List<LargeReceive> undelivered = new ArrayList<>();
    private int finishedOwed;
    private boolean closed;

    // Completion loop only: messages that arrived behind a large message still being read.
    private final ArrayDeque<RdmaMessage> ordered = new ArrayDeque<>();

    Rendezvous(Port port, long budget, java.util.function.IntFunction<MemorySegment> memory) {
        this.port = port;
        this.budget = budget;
        this.memory = memory;
    }

    // ---------------------------------------------------------------- sending

    /**
     * Monitor: whether a large send can be posted now; if its copy is not made yet and the budget
     * allows, starts making it.
     */
    boolean ready(LargeSend s) {
        if (s.state == LargeSend.READY) {
            return true;
        }
        if (s.state != LargeSend.NEW || closed) {
            return false;
        }
        if (s.local != null && Registration.of(s.local).region().access().contains(AccessFlag.REMOTE_READ)) {
            // Registered by the application with remote read: the peer reads it where it is.
            s.address = s.local.segment().address();
            s.rkey = Registration.of(s.local).region().rkey();
            s.state = LargeSend.READY;
            return true;
        }
        boolean budgeted = s.local == null; // a second registration of the caller's memory pins nothing new
        if (!budgeted || sendBytes == 0 || sendBytes + s.length <= budget) {
            s.state = LargeSend.PREPARING;
            s.budgeted = budgeted;
            if (budgeted) {
                sendBytes += s.length;
            }
            preparing.add(s);
            port.worker().schedule(() -> prepare(s));
        }
        return false;
    }

    /** Worker: the copy the peer will read. */
    private void prepare(LargeSend s) {
        Throwable failed = null;
        try {
            MemorySegment source = s.local != null ? s.local.segment() : MemorySegment.ofBuffer(s.source);
            if (source.isNative()) {
                s.copy = source; // off-heap already: the peer reads the caller's memory, no copy at all
            } else {
                s.arena = Arena.ofShared();
                s.copy = s.arena.allocate(s.length, 64);
                MemorySegment.copy(source, 0, s.copy, 0, s.length);
            }
            // Through the cache, held for this message only: concurrent large sends of the same memory share
            // one region, and nothing stays pinned after the last of them (docs/api.md).
            s.region = port.registrations().lease(s.copy, AccessFlags.of(AccessFlag.REMOTE_READ), null);
            s.address = s.copy.address();
            s.rkey = s.region.registration().region().rkey();
        } catch (RuntimeException | OutOfMemoryError e) {
            failed = e;
        }
        boolean free;
        port.lock().lock();
        try {
            preparing.remove(s);
            free = failed != null || s.abandoned || closed;
            if (free) {
                unbudget(s);
            } else {
                s.state = LargeSend.READY;
            }
        } finally {
            port.lock().unlock();
        }
        if (free) {
            s.free();
            s.state = LargeSend.DONE;
            if (failed != null) {
                s.sink.error(failed); // the queue drops a DONE send from its head
            }
        }
        port.resume();
    }

    /** Monitor: its descriptor was posted; the peer's "finished" completes it. */
    void posted(LargeSend s) {
        s.state = LargeSend.POSTED;
        posted.add(s);
    }

    /** Monitor: a queued large send was cancelled before it was posted. */
    void cancelled(LargeSend s) {
        s.abandoned = true;
        if (s.state == LargeSend.READY || s.state == LargeSend.NEW) {
            unbudget(s);
            s.free();
        }
    }

    /** Monitor: its memory no longer counts against the budget. */
    private void unbudget(LargeSend s) {
        if (s.budgeted) {
            s.budgeted = false;
            sendBytes -= s.length;
        }
    }

    /**
     * Monitor: the peer finished reading this many of the large messages sent, oldest first.
     *
     * @param n how many the peer says it finished
     * @throws RdmaCmException.ProtocolViolation when it says more than were sent and not finished yet
     *                                           (nothing is freed then)
     */
    void finished(int n) {
        if (n > posted.size()) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "it finished reading " + n
                    + " large messages, but only " + posted.size() + " were sent and not finished");
        }
        for (int i = 0; i < n; i++) {
            LargeSend s = posted.poll();
            unbudget(s);
            s.free();
            if (!s.abandoned) {
                s.sink.success();
            }
        }
    }

    // ---------------------------------------------------------------- receiving

    /** Completion loop, lock held: a descriptor arrived in {@code slot}. */
    void arrived(ReceiveSlot slot, long address, int rkey, int length) {
        LargeReceive r = new LargeReceive(this, slot, address, rkey, length);
        undelivered.add(r);
        waiting.add(r);
        ordered.add(r);
        admit();
    }

    /** Monitor: starts reading the oldest waiting large messages while the budget allows. */
    private void admit() {
        LargeReceive r;
        while (!closed && (r = waiting.peek()) != null && (receiveBytes == 0 || receiveBytes + r.length <= budget)) {
            waiting.poll();
            receiveBytes += r.length;
            r.state = LargeReceive.READING;
            if (memory == null && inFreeBlock(r)) {
                // Read at once, from here: no hop to a worker and no registration for this message.
                r.readPosted = true;
                port.postRead(r);
                continue;
            }
            LargeReceive next = r;
            port.worker().schedule(() -> allocate(next));
        }
    }

    /** Lock held: whether {@code r} got a free block of a registered slab to be read into. */
    private boolean inFreeBlock(LargeReceive r) {
        BufferSlabs.Block b = port.registrations().slabs().tryCarve(r.length);
        if (b == null) {
            return false;
        }
        r.readInto(b);
        return true;
    }

    /** Worker: the region the message is read into. */
    private void allocate(LargeReceive r) {
        try {
            if (memory == null && r.length <= BufferSlabs.MAX_BLOCK) {
                r.readInto(port.registrations().slabs().carve(Arena.ofAuto(), r.length)); // registers a slab
            } else if (memory != null) {
                MemorySegment m = memory.apply(r.length);
                if (m == null || !m.isNative() || m.byteSize() < r.length) {
                    throw new IllegalStateException("largeMessageMemory returned " + m + " for a message of "
                            + r.length + " bytes: it must return off-heap memory of at least that size");
                }
                r.memory = m.asSlice(0, r.length);
                r.region = port.pd().register(r.memory, AccessFlags.LOCAL_WRITE);
            } else {
                r.arena = Arena.ofShared();
                r.memory = r.arena.allocate(r.length, 4096);
                r.region = port.pd().register(r.memory, AccessFlags.LOCAL_WRITE);
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            r.free();
            port.fail(e);
            return;
        }
        port.lock().lock();
        try {
            if (!closed) {
                r.readPosted = true;
                port.postRead(r);
                return;
            }
        } finally {
            port.lock().unlock();
        }
        r.free(); // nothing was posted into it, and freeAll() leaves it to this worker
    }

    /** Completion loop: its READ completed. */
    void readDone(LargeReceive r) {
        r.state = LargeReceive.READ;
        emitReady();
    }

    /**
     * Completion loop: a small message, delivered now unless it must wait behind a large one.
     *
     * @return whether it was queued (the caller must not deliver it)
     */
    boolean queueBehindLarge(ReceiveSlot slot) {
        if (ordered.isEmpty()) {
            return false;
        }
        ordered.add(slot);
        return true;
    }

    /** Completion loop: delivers, in order, what is no longer waiting for a read. */
    private void emitReady() {
        RdmaMessage m;
        while ((m = ordered.peek()) != null) {
            if (m instanceof LargeReceive r) {
                if (r.state != LargeReceive.READ) {
                    return;
                }
                port.lock().lock();
                try {
                    undelivered.remove(r);
                    // Counted here, in arrival order: regions are allocated in parallel, so reads may be
                    // posted and complete out of order, and the sender frees its oldest one per count.
                    finishedOwed++;
                } finally {
                    port.lock().unlock();
                }
                r.state = LargeReceive.DELIVERED;
                ordered.poll();
                port.emit(r, r.length);
            } else {
                ordered.poll();
                port.emit(m, ((ReceiveSlot) m).rawLength());
            }
        }
    }

    /** Any thread: the application released a large message. */
    void released(LargeReceive r) {
        port.lock().lock();
        try {
            if (r.state != LargeReceive.DELIVERED) {
                return;
            }
            r.state = LargeReceive.RELEASED;
            receiveBytes -= r.length;
        } finally {
            port.lock().unlock();
        }
        r.free();
        port.releaseSlot(r.descriptor);
        port.lock().lock();
        try {
            admit();
        } finally {
            port.lock().unlock();
        }
    }

    /** Monitor: how many of the peer's large messages were read and not yet reported. */
    int finishedOwed() {
        return finishedOwed;
    }

    /**
     * Monitor: the count to put in the next immediate data, at most what the field holds.
     *
     * @return the count, already shifted into place
     */
    int finishedField() {
        return Math.min(finishedOwed, Wire.FINISHED) << Wire.FINISHED_SHIFT;
    }

    /**
     * Monitor: a message carrying {@link #finishedField()} was posted.
     *
     * @param field what it carried
     */
    void finishedSent(int field) {
        finishedOwed -= field >>> Wire.FINISHED_SHIFT;
    }

    /** Monitor: the connection is ending: every unfinished large send fails; nothing new starts. */
    void close(Throwable cause) {
        closed = true;
        for (LargeSend s : posted) {
            if (!s.abandoned) {
                s.sink.error(cause);
                s.abandoned = true;
            }
        }
        for (LargeSend s : preparing) {
            if (!s.abandoned) {
                s.sink.error(cause);
                s.abandoned = true;
            }
        }
    }

    /**
     * After the queue pair is destroyed (the device touches no memory any more): frees the copies and
     * the regions of messages the application never got. Delivered messages stay valid until released.
     */
    void freeAll() {
        List<LargeSend> sends;
        List<LargeReceive> receives;
        port.lock().lock();
        try {
            sends = new ArrayList<>(posted);
            posted.clear();
            receives = new ArrayList<>(undelivered);
            undelivered.clear();
        } finally {
            port.lock().unlock();
        }
        sends.forEach(LargeSend::free);
        for (LargeReceive r : receives) {
            // A region still being allocated is freed by its worker, which sees the queue closed.
            if (r.state == LargeReceive.READ || r.state == LargeReceive.WAITING
                    || (r.state == LargeReceive.READING && r.readPosted)) {
                r.state = LargeReceive.RELEASED;
                r.free();
            }
        }
    }
}
