package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.cq.CqDrain;
import rdmaflux.cm.Datagram;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.internal.memory.Registrations;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.concurrent.Queues;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * The UD data path shared by multicast memberships, multicast senders and datagram endpoints: one UD
 * QP with its CQ (notifying through its loop's channel for the device), a ring of receive buffers
 * ({@link UdReceiveRing}), registered send buffers ({@link UdSends}), and the fan-out of received datagrams
 * to subscribers.
 *
 * <p><b>Receive credits.</b> At most {@code receiveBuffers} datagrams are either posted as receives or
 * delivered-but-not-yet-consumed: a receive is posted again only when a datagram has reached every
 * subscriber's {@code onNext} (or was discarded by a cancelling one). So demand bounds what is posted:
 * a subscriber that stops requesting leaves the ring empty after {@code receiveBuffers} datagrams, and
 * the device drops what arrives after that (UD has no RNR retry; see docs/multicast.md for counting).
 *
 * <p>Threads: receive bookkeeping and emission run on the completion loop; the send side is
 * guarded by {@code this} and posted from the caller's thread; user signals hop to the scheduler.
 * The CQ is created through a CM id's context, so closing that id frees it; the QP, regions and address
 * handles are made in the loops' protection domain for the device, which outlives the queue, so
 * {@link #release} closes them first. The owner calls that after {@link #shutdown} has run.
 */
public final class UdQueue implements CompletionLoop.Handler, CqDrain.Sink {
    /** {@code RDMA_UDP_QKEY} of rdma_cma.h: the qkey the CM uses for the UDP port space. */
    static final int RDMA_UDP_QKEY = 0x01234567;

    /** Makes the QP: through rdma_create_qp for multicast ids (librdmacm attaches it), or by hand. */
    interface QpFactory {
        QueuePair create(ProtectionDomain pd, QpInitAttributes attributes);
    }

    private final CompletionLoop loop;
    private final RdmaRecorder recorder;
    private final Scheduler scheduler;
    private final String deviceName;
    private final int port;
    private final int maxPayload;
    private final Arena arena = Arena.ofShared();
    /** The loops' protection domain for the device: shared, never closed here. */
    final ProtectionDomain pd;
    /** Address handles made for this queue's sends ({@link #addressHandle}); closed in {@link #release}. */
    private final java.util.List<AddressHandle> handles = new java.util.ArrayList<>();
    /** Guarded by {@link #handles}: set once {@link #release} closed them, so none is made after. */
    private boolean handlesClosed;
    private final CompletionQueue cq;
    private final CqDrain drain;
    final QueuePair qp;

    // Receive side: completion loop only, except the atomics and the inbox list.
    private final int receiveBuffers;
    private final UdReceiveRing ring;
    private final AtomicBoolean replenishScheduled = new AtomicBoolean();
    private final CopyOnWriteArrayList<Inbox> inboxes = new CopyOnWriteArrayList<>();
    private final AtomicLong received = new AtomicLong();
    private final GrhAddresses grhAddresses = new GrhAddresses();
    private final AtomicLong receiveErrors = new AtomicLong();
    private boolean registered;
    private volatile boolean tornDown;

    /** The send side. */
    private final UdSends sends;

    /**
     * Creates the resources (on the CM loop). On failure the CQ (and a QP made through the id) belong to
     * the context's CM id, which the caller closes; what was made in the shared domain is closed here.
     *
     * @param ctx the CM id's context, which owns the CQ
     * @param device the shared context of the same device, whose channel on {@code loop} the CQ uses
     * @param domain the loops' protection domain for the device
     * @param receiveBuffers 0 for a send-only queue
     * @param sendBuffers 0 for a receive-only queue
     */
    @SuppressWarnings("unchecked")
    UdQueue(RdmaContext ctx, RdmaContext device, Registrations domain, int port, QpFactory factory,
            int receiveBuffers, int sendBuffers, Scheduler scheduler, CompletionLoop loop, RdmaRecorder recorder) {
        this.loop = loop;
        this.recorder = recorder;
        this.scheduler = scheduler;
        this.deviceName = ctx.deviceName();
        this.port = port;
        this.receiveBuffers = receiveBuffers;
        this.pd = domain.pd();
        QueuePair madeQp = null;
        UdReceiveRing madeRing = null;
        try {
            this.maxPayload = ctx.queryPort(port).activeMtu().bytes();
            this.cq = ctx.createCompletionQueue(receiveBuffers + sendBuffers + 1, loop.channel(device),
                    loop.completionVector(ctx.completionVectorCount()));
            this.drain = new CqDrain(cq, this, 0);
            this.qp = factory.create(pd, QpInitAttributes.builder(QpType.UD).completionQueue(cq)
                    .depth(Math.max(1, sendBuffers), Math.max(1, receiveBuffers)).sge(1, 1).build());
            madeQp = qp;
            this.ring = UdReceiveRing.register(pd, arena, qp, receiveBuffers, maxPayload);
            madeRing = ring;
            sends = new UdSends(qp, pd, arena, sendBuffers, maxPayload, "the active MTU of " + deviceName
                    + " port " + port, recorder, scheduler);
        } catch (RuntimeException | Error e) {
            // The QP first (it uses the CQ, which the id's close destroys after this), then the region.
            closeQuietly(madeQp);
            closeQuietly(madeRing == null ? null : madeRing.region());
            arena.close();
            throw e;
        }
    }

    private static void closeQuietly(AutoCloseable resource) {
        if (resource == null) {
            return;
        }
        try {
            resource.close();
        } catch (Exception e) {
            CmLog.LOG.log(Level.WARNING, "closing " + resource + " failed", e);
        }
    }

    /**
     * An address handle for sends from this queue, in its protection domain; closed with the queue.
     *
     * @param attributes the destination
     * @return the handle
     * @throws IllegalStateException when the queue was released
     */
    AddressHandle addressHandle(rdmaflux.verbs.AddressHandleAttributes attributes) {
        synchronized (handles) {
            if (handlesClosed) {
                throw new IllegalStateException("closed");
            }
            AddressHandle ah = pd.createAddressHandle(attributes);
            handles.add(ah);
            return ah;
        }
    }

    /** {@return the largest datagram payload: the port's active MTU (the GRH takes no payload room)} */
    int maxPayload() {
        return maxPayload;
    }

    String deviceName() {
        return deviceName;
    }

    int port() {
        return port;
    }

    /** {@return receives posted right now (tests)} */
    public int postedReceives() {
        return ring.posted();
    }

    long received() {
        return received.get();
    }

    long receiveErrors() {
        return receiveErrors.get();
    }

    /** Posts the whole receive ring; before the QP can receive anything (CM loop, before {@link #start}). */
    void postInitialReceives() {
        assert !registered : "before start()";
        replenish();
    }

    /** Hands the CQ to the completion loop. */
    void start() {
        loop.execute(() -> {
            if (tornDown) {
                return;
            }
            loop.register(cq, this);
            registered = true;
            drain.start();
            replenish();
        });
    }

    // ------------------------------------------------------------------ receiving

    /** Adds a subscriber slot; datagrams received from now on are offered to it. Any thread. */
    Inbox addInbox() {
        Inbox in = new Inbox();
        inboxes.add(in);
        return in;
    }

    /** Removes a subscriber slot; what it still holds is given back. Any thread. */
    void removeInbox(Inbox in) {
        loop.execute(() -> {
            inboxes.remove(in);
            in.close(null);
        });
    }

    /** {@link #creditReturned()}, made once: every received datagram holds it. */
    private final Runnable creditReturned = this::creditReturned;

    /** A datagram has been seen by every subscriber: its receive can be posted again. Any thread. */
    public void creditReturned() {
        ring.returned();
        if (loop.inLoop()) {
            if (!drain.draining() && !tornDown) {
                replenish(); // e.g. a closing inbox gave its datagrams back
            }
            return; // inside drain(), which replenishes before it returns
        }
        if (replenishScheduled.compareAndSet(false, true)) {
            loop.execute(() -> {
                replenishScheduled.set(false);
                if (!tornDown) {
                    replenish();
                }
            });
        }
    }

    /** Completion loop (or CM loop before start): posts receives for every free credit. */
    private void replenish() {
        assert loop.inLoop() || !registered : "completion loop only once started";
        RuntimeException refused = ring.replenish();
        if (refused != null) {
            // The QP is in error or being destroyed: the ring kept the slots free; teardown follows. Outside
            // a teardown nothing will post them again, so that is worth a warning.
            CmLog.LOG.log(tornDown ? Level.DEBUG : Level.WARNING, "posting receives failed", refused);
        }
    }

    @Override
    public boolean busy() {
        return false;
    }

    @Override
    public boolean drain() {
        assert loop.inLoop() : "completion loop only";
        if (tornDown) {
            return false;
        }
        boolean found = drain.drain();
        replenish();
        return found;
    }

    @Override
    public void complete(WorkCompletions wc, int i) {
        assert loop.inLoop() : "completion loop only";
        long wrId = wc.wrId(i);
        if (UdReceiveRing.isReceive(wrId)) {
            // The datagram is copied out below, before anything can post the slot again.
            int slot = ring.completed(wrId);
            if (!wc.isSuccess(i)) {
                if (wc.status(i) != WcStatus.WR_FLUSH_ERR) {
                    receiveErrors.incrementAndGet();
                    recorder.datagramDropped("error");
                    CmLog.LOG.log(Level.WARNING, "UD receive failed: " + wc.describe(i));
                }
                return;
            }
            Datagram d = GrhAddresses.fromReceive(ring.memory(), ring.offset(slot), wc.byteLength(i),
                    wc.hasGrh(i), wc.sourceQp(i), wc.hasImmediate(i), wc.hasImmediate(i) ? wc.immediateData(i) : 0,
                    grhAddresses, creditReturned);
            received.incrementAndGet();
            recorder.datagramReceived(d.length());
            deliver(d);
            return;
        }
        sends.completed((int) wrId, wc.isSuccess(i) ? null : sendError(wc, i));
    }

    private void deliver(Datagram d) {
        ring.delivered();
        // The datagram starts with one reference (this method's); each inbox that takes it adds one.
        for (Inbox in : inboxes) {
            DatagramValues.retain(d);
            if (!in.offer(d)) {
                recorder.datagramDropped("overflow");
                DatagramValues.consumed(d);
            }
        }
        DatagramValues.consumed(d);
    }

    /**
     * One subscriber's queue. Emission happens on the completion loop only; the subscriber reads on the
     * options' scheduler. A datagram's credit returns when it reaches the subscriber's {@code onNext}, or
     * when a cancel or close discards it.
     */
    final class Inbox {
        private static final int FRESH = 0;
        private static final int SUBSCRIBED = 1;
        private static final int CLOSED = 2;

        private final Queue<Datagram> queue = Queues.<Datagram>get(Math.max(2, receiveBuffers + 1)).get();
        private final Sinks.Many<Datagram> sink = Sinks.many().unicast().onBackpressureBuffer(queue);
        private final AtomicInteger state = new AtomicInteger(FRESH);

        boolean offer(Datagram d) {
            return state.get() != CLOSED && sink.tryEmitNext(d).isSuccess();
        }

        /** {@return the datagrams; one subscriber} */
        Flux<Datagram> flux() {
            return Flux.defer(() -> {
                if (!state.compareAndSet(FRESH, SUBSCRIBED)) {
                    return Flux.error(new IllegalStateException(state.get() == SUBSCRIBED
                            ? "datagrams can be subscribed to once" : "closed before it was subscribed to"));
                }
                return sink.asFlux()
                        .publishOn(scheduler, Math.max(1, Math.min(receiveBuffers, Queues.SMALL_BUFFER_SIZE)))
                        .doOnNext(DatagramValues::consumed)
                        .doOnDiscard(Datagram.class, DatagramValues::consumed);
            });
        }

        /** Completion loop: ends the stream; a never-subscribed queue gives its credits back here. */
        void close(Throwable cause) {
            if (state.compareAndSet(FRESH, CLOSED)) {
                Datagram d;
                while ((d = queue.poll()) != null) {
                    DatagramValues.consumed(d);
                }
            }
            if (cause != null) {
                sink.tryEmitError(cause);
            } else {
                sink.tryEmitComplete();
            }
        }
    }

    // ------------------------------------------------------------------ sending

    /** One datagram ({@link UdSends#send(AddressHandle, int, int, ByteBuffer, boolean, int)}). */
    Mono<Void> send(AddressHandle ah, int qpn, int qkey, ByteBuffer data, boolean withImmediate, int immediate) {
        return sends.send(ah, qpn, qkey, data, withImmediate, immediate);
    }

    /** Datagrams in order, without a {@code Mono} each ({@link UdSends#send(AddressHandle, int, int, Publisher)}). */
    Mono<Void> send(AddressHandle ah, int qpn, int qkey, Publisher<? extends ByteBuffer> datagrams) {
        return sends.send(ah, qpn, qkey, datagrams);
    }

    private Throwable sendError(WorkCompletions wc, int i) {
        WcStatus status = wc.status(i);
        if (status == WcStatus.WR_FLUSH_ERR) {
            return sends.closedError();
        }
        return new RdmaCmException.CompletionError(status, "UD send failed: " + wc.describe(i));
    }

    /** Refuses new sends from now on; any thread. */
    void markClosed(Throwable cause) {
        sends.markClosed(cause);
    }

    // ------------------------------------------------------------------ teardown

    /**
     * Stops the data path on the completion loop: takes what already completed, leaves the loop, fails
     * unfinished sends, ends every subscriber's stream, then runs {@code after} (there, the owner closes
     * its CM id, which frees the native objects, then calls {@link #releaseMemory()}).
     *
     * @param cause the failure, or {@code null} for an orderly close
     */
    void shutdown(Throwable cause, Runnable after) {
        markClosed(cause);
        loop.execute(() -> {
            if (registered) {
                drain.finalDrain();
                loop.unregister(cq);
                registered = false;
            }
            tornDown = true;
            sends.failAll(sends.closedError());
            for (Inbox in : inboxes) {
                in.close(cause);
            }
            inboxes.clear();
            after.run();
        });
    }

    /**
     * Before the owning CM id is closed: closes what this queue made in the shared domain, children of
     * the domain that the id's close would not reach. The QP goes first (it uses the CQ, which the id's
     * context destroys), then the address handles and regions; a region still used by a posted request
     * is deregistered when the QP's destroy gives that request's lease back.
     */
    private void closeShared() {
        closeQuietly(qp);
        java.util.List<AddressHandle> ahs;
        synchronized (handles) {
            handlesClosed = true;
            ahs = new java.util.ArrayList<>(handles);
            handles.clear();
        }
        ahs.forEach(UdQueue::closeQuietly);
        closeQuietly(ring.region());
        closeQuietly(sends.region());
    }

    /** After the owning CM id is closed (the MRs are deregistered): frees the buffers. */
    void releaseMemory() {
        arena.close();
    }

    /**
     * CM loop, once the completion loop let go of the queue: closes what the queue made in the loops'
     * shared domain (QP, address handles, MRs), destroys the owning id (and with it the CQ), then frees
     * the buffers. Either may be null when opening failed early.
     */
    static void release(CmId id, UdQueue queue) {
        if (queue != null) {
            queue.closeShared();
        }
        if (id != null) {
            try {
                id.close();
            } catch (RuntimeException e) {
                CmLog.LOG.log(Level.WARNING, "closing " + id + " failed", e);
            }
        }
        if (queue != null) {
            queue.releaseMemory();
        }
    }
}
