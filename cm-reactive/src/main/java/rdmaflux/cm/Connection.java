package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import reactor.util.concurrent.Queues;
import rdmaflux.cm.ConnectionState.Closed;
import rdmaflux.cm.ConnectionState.Disconnecting;
import rdmaflux.cm.ConnectionState.Failed;
import rdmaflux.cm.ConnectionStateMachine.Role;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionChannel;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaException;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WcOpcode;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * The implementation of {@link RdmaConnection}.
 *
 * <p>Threads: the CM loop drives the state machine and all rdma_cm calls; the completion loop drains
 * the CQ; application threads post sends and re-post receives. The send side (credits, buffers, the
 * operation table, posting) is guarded by {@code this}; the state machine is touched only on the CM
 * loop. Application-visible signals hop to {@link ConnectionOptions#scheduler()}.
 */
final class Connection implements RdmaConnection, CompletionLoop.Handler {
    /**
     * Receive buffers posted beyond the credits granted, for the peer's control messages, which need
     * no credit (they return credits; needing one could deadlock). A control's send completes when
     * the peer's device took it, not when the peer's software re-posted the buffer, so the sender
     * cannot count them; instead {@link #maybeReturnCredits} bounds how many can be unprocessed at
     * the peer: at most 2 credit updates (see there) plus the one orderly close.
     */
    private static final int CONTROL_SLOTS = ConnectionOptions.CONTROL_RECEIVE_BUFFERS;
    private static final long RECV_TAG = 1L << 62;
    private static final int SLOT_POSTED = 0;
    private static final int SLOT_DELIVERED = 1;
    private static final int SLOT_DEAD = 2;
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);

    private enum Kind {
        SEND, CONTROL, CLOSE, READ, WRITE, WRITE_IMM, CAS, FAA
    }

    /** A posted send-queue work request and whom to tell when it completes. */
    private static final class Op {
        final int index;
        Kind kind;
        MonoSink<Object> sink;
        int sendSlot = -1;
        int bytes;
        long started;

        Op(int index) {
            this.index = index;
        }
    }

    /**
     * A request waiting for a send buffer, a send-queue entry or a credit. Only requests that cannot be
     * posted at once are queued, so the common case allocates none.
     */
    private record Pending(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                           MonoSink<Object> sink) {
    }

    private final Role role;
    private final ConnectionOptions options;
    /** Set once before the connection is published, on the thread that creates it. */
    private RdmaRecorder recorder;
    private final CmEventLoop cm;
    private final CompletionLoop completions;
    private final ConnectionStateMachine machine;
    private final boolean credits;
    private final Sinks.Many<RdmaMessage> inbound;
    private final Sinks.Empty<Void> disposed = Sinks.empty();
    private final Arena arena = Arena.ofAuto();

    private MonoSink<RdmaConnection> connectSink;
    /** Client: set by whichever comes first, handing the connect result over or the subscriber's cancel. */
    private final java.util.concurrent.atomic.AtomicBoolean settled = new java.util.concurrent.atomic.AtomicBoolean();
    private CmId id;
    private InetSocketAddress remote;
    private long stepStarted;
    private byte[] peerData = new byte[0];
    private int peerBufferSize;
    private boolean peerClosed;
    private volatile boolean closedForSends;
    private boolean tornDown;
    private final java.util.concurrent.atomic.AtomicInteger outstanding = new java.util.concurrent.atomic.AtomicInteger();
    private boolean remoteClose;
    private boolean registered;
    private Throwable failure;

    // Native resources, created on the CM loop when the connection reaches CONNECTING/ACCEPTING.
    private ProtectionDomain pd;
    private CompletionChannel channel;
    private CompletionQueue cq;
    private QueuePair qp;
    private MemoryRegion recvMr;
    private MemoryRegion sendMr;
    private MemoryRegion atomicMr;
    private ReceiveSlot[] slots;
    private MemorySegment sendBuffers;
    private MemorySegment atomics;
    private final WorkCompletions wc = new WorkCompletions(32);

    // Send side, guarded by this.
    private Op[] ops;
    private final ArrayDeque<Op> freeOps = new ArrayDeque<>();
    private int[] freeSendSlots;
    private int freeSendTop;
    private int creditsAvailable;
    private int creditsToReturn;
    /** Messages that took a credit (data, write notifications), delivered and not yet released. */
    private int held;
    private boolean controlInFlight;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /**
     * Per send buffer slot, a ByteBuffer view of its memory, made on the slot's first use: copying a
     * message in through it allocates nothing (MemorySegment.ofBuffer would wrap each message).
     */
    private ByteBuffer[] sendViews;
    private SendRequests sendBatch;
    private ReceiveRequests recvBatch;
    private long lastActivity;

    private Connection(Role role, ConnectionOptions options, CmEventLoop cm, CompletionLoop completions) {
        this.role = role;
        this.options = options;
        this.recorder = options.recorder();
        this.cm = cm;
        this.completions = completions;
        this.credits = options.protocol() == ConnectionOptions.Protocol.CREDITS;
        this.inbound = Sinks.many().unicast().onBackpressureBuffer(
                Queues.<RdmaMessage>get(options.receiveBuffers() + CONTROL_SLOTS + 1).get());
        this.machine = new ConnectionStateMachine(role, options.timeouts(), reactor.core.scheduler.Schedulers.parallel(),
                cm, this::onTransition);
    }

    // ---------------------------------------------------------------- setup

    static Mono<RdmaConnection> connect(InetSocketAddress remote, ConnectionOptions options) {
        return Mono.<RdmaConnection>create(sink -> {
            CmEventLoop cm;
            try {
                cm = CmEventLoop.shared();
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            Connection c = new Connection(Role.CLIENT, options, cm, CompletionLoop.shared());
            c.connectSink = sink;
            c.remote = remote;
            c.recorder = options.recorder().forPeer(remote);
            sink.onCancel(() -> {
                // Either the subscriber gets the connection or the cancel closes it, never neither: a
                // cancel that raced the handshake's success used to leave an established, unowned
                // connection (found by FaultsIT's random cancel points).
                if (c.settled.compareAndSet(false, true)) {
                    cm.execute(c.machine::close);
                }
            });
            cm.execute(() -> {
                try {
                    c.id = cm.channel().createId(PortSpace.TCP);
                    cm.register(c.id, c::onCmEvent);
                    c.machine.start();
                } catch (RuntimeException e) {
                    c.machine.fail(e);
                }
            });
        }).doOnDiscard(RdmaConnection.class, RdmaConnection::dispose); // delivered to nobody: close it
    }

    /** Server side: called on the CM loop with the id of a connect request that was accepted. */
    static Connection accept(CmEvent request, Wire.Hello hello, ConnectionOptions options, CmEventLoop cm,
                             MonoSink<RdmaConnection> established) {
        Connection c = new Connection(Role.SERVER, options, cm, CompletionLoop.shared());
        c.id = request.id();
        c.connectSink = established;
        c.remote = request.id().peerAddress();
        c.recorder = options.recorder().forPeer(c.remote);
        c.applyHello(hello, request.privateData());
        cm.register(c.id, c::onCmEvent);
        c.machine.start();
        return c;
    }

    private void applyHello(Wire.Hello hello, byte[] raw) {
        if (credits) {
            if (hello == null) {
                throw new IllegalStateException("the peer is not an rdmaflux peer (no RFX1 header in its private "
                        + "data): use ConnectionOptions.Protocol.RAW to talk to plain verbs applications");
            }
            peerData = hello.applicationData();
            peerBufferSize = hello.bufferSize();
            creditsAvailable = hello.credits();
        } else {
            peerData = raw;
            peerBufferSize = options.bufferSize();
        }
    }

    /**
     * Ends the connect Mono (CM loop). The client's subscriber is told on the options' scheduler, and
     * only if it did not cancel first ({@link #settled}); the server's sink is the server's own,
     * non-blocking one.
     */
    private void settle(MonoSink<RdmaConnection> s, Throwable error) {
        if (role == Role.SERVER) {
            if (error == null) {
                s.success(this);
            } else {
                s.error(error);
            }
            return;
        }
        options.scheduler().schedule(() -> {
            if (!settled.compareAndSet(false, true)) {
                return; // cancelled first; the cancel closes the connection
            }
            if (error == null) {
                s.success(this);
            } else {
                s.error(error);
            }
        });
    }

    /** CM loop: every event for this connection's id. */
    private void onCmEvent(CmEvent e) {
        recorder.cmEvent(e.type());
        if ((e.type() == CmEventType.ESTABLISHED) && role == Role.CLIENT && machine.state() == ConnectionState.CONNECTING) {
            try {
                applyHello(credits ? Wire.parse(e.privateData()) : null, e.privateData());
            } catch (RuntimeException ex) {
                machine.fail(ex);
                return;
            }
        }
        machine.onEvent(e.type(), e.status(), e.privateData());
    }

    /** CM loop: performs what entering a state requires. */
    private void onTransition(ConnectionState from, ConnectionState to) {
        long now = System.nanoTime();
        if (from.step() != null && from.step() != Step.TRANSFER && !to.isTerminal()) {
            recorder.stepDuration(from.step(), now - stepStarted);
        }
        stepStarted = now;
        try {
            switch (to) {
                case ConnectionState.ResolvingAddress r -> {
                    try {
                        id.resolveAddress(null, remote, options.timeout(Step.ADDRESS));
                    } catch (RdmaException e) {
                        // rdma_resolve_addr fails at once (ENETUNREACH, EADDRNOTAVAIL, ...) when the kernel
                        // already knows there is no route: the same failure as a later ADDR_ERROR event.
                        throw stepError(Step.ADDRESS, CmEventType.ADDR_ERROR, e);
                    }
                }
                case ConnectionState.ResolvingRoute r -> {
                    try {
                        id.resolveRoute(options.timeout(Step.ROUTE));
                    } catch (RdmaException e) {
                        throw stepError(Step.ROUTE, CmEventType.ROUTE_ERROR, e);
                    }
                }
                case ConnectionState.Connecting c -> {
                    createResources();
                    id.connect(parameters());
                }
                case ConnectionState.Accepting a -> {
                    createResources();
                    id.accept(parameters());
                }
                case ConnectionState.Established e -> established();
                case Disconnecting d -> {
                    if (d.remote()) {
                        remoteDisconnect();
                    } else {
                        localDisconnect();
                    }
                }
                case Closed c -> teardown(null, from);
                case Failed f -> teardown(f.cause(), from);
                default -> {
                }
            }
        } catch (RuntimeException ex) {
            machine.fail(ex);
        }
    }

    /**
     * A CM call that failed synchronously, as the typed exception its error event would have produced
     * (status = -errno, like an event's), so callers branch on one type whichever way it failed.
     */
    private static RdmaCmException stepError(Step step, CmEventType type, RdmaException cause) {
        if (cause instanceof RdmaCmException typed) {
            return typed;
        }
        RdmaCmException e = RdmaCmException.of(step, type, -cause.errno(), null);
        e.addSuppressed(cause);
        return e;
    }

    private ConnectionParameters parameters() {
        byte[] data = credits ? Wire.hello(options.receiveBuffers(), options.bufferSize(), options.privateData())
                : options.privateData();
        return new ConnectionParameters(data, 1, 1, false, options.retryCount(), options.rnrRetryCount(), false, 0);
    }

    private void createResources() {
        RdmaContext ctx = id.context();
        pd = ctx.allocateProtectionDomain();
        channel = ctx.createCompletionChannel();
        int recvCount = options.receiveBuffers() + (credits ? CONTROL_SLOTS : 0);
        int depth = options.sendQueueDepth();
        cq = ctx.createCompletionQueue(depth + recvCount, channel, 0);
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
        sendBatch = new SendRequests(1, 1);
        recvBatch = new ReceiveRequests(recvCount, 1);
        slots = new ReceiveSlot[recvCount];
        for (int i = 0; i < recvCount; i++) {
            slots[i] = new ReceiveSlot(this, i, recvMemory.asSlice((long) size * i, size));
            recvBatch.set(i, RECV_TAG | i).sge(i, 0, recvMr, (long) size * i, size);
        }
        qp.postReceive(recvBatch, recvCount);
        outstanding(recvCount);
    }

    private void established() {
        recorder.connectOutcome(role == Role.SERVER, RdmaRecorder.Outcome.SUCCESS, null);
        recorder.activeConnections(1);
        completions.execute(() -> {
            if (tornDown) {
                return;
            }
            completions.register(channel, this);
            registered = true;
            cq.requestNotification(false);
            drain();
        });
        MonoSink<RdmaConnection> s = connectSink;
        connectSink = null;
        if (s != null) {
            settle(s, null);
        }
    }

    // ---------------------------------------------------------------- teardown

    private void localDisconnect() {
        closedForSends = true;
        boolean closeSent = false;
        if (credits) {
            synchronized (this) {
                closeSent = postControl(Kind.CLOSE);
            }
        }
        if (!closeSent) {
            id.disconnect();
        }
        // else: the CLOSE message's completion calls disconnect, so the peer reads it before DREQ.
    }

    private void remoteDisconnect() {
        closedForSends = true;
        try {
            id.disconnect(); // answers the peer's DREQ
        } catch (RuntimeException e) {
            // The id may already be gone with the peer; teardown follows regardless.
        }
        remoteClose = true;
        teardown(null, machine.state());
    }

    /** CM loop. Frees everything: completion side first, then the id with everything made through it. */
    private void teardown(Throwable cause, ConnectionState from) {
        if (tornDown) {
            return;
        }
        tornDown = true;
        closedForSends = true;
        failure = cause;
        boolean wasEstablished = from instanceof ConnectionState.Established || from instanceof Disconnecting;
        if (wasEstablished) {
            recorder.activeConnections(-1);
        } else {
            recorder.connectOutcome(role == Role.SERVER, cause == null ? RdmaRecorder.Outcome.CANCELLED
                    : RdmaRecorder.Outcome.FAILURE, cause == null ? null : cause.getClass().getSimpleName());
        }
        MonoSink<RdmaConnection> s = connectSink;
        connectSink = null;
        if (s != null && cause != null) {
            settle(s, cause);
        }
        completions.execute(() -> {
            Throwable end = cause;
            if (registered) {
                // Messages that arrived before the disconnect are still in the CQ: deliver them, and
                // learn whether the peer's orderly CLOSE was among them, before deciding how receive() ends.
                try {
                    pollAll();
                } catch (RuntimeException e) {
                    EventLoop.LOG.log(System.Logger.Level.DEBUG, "final drain failed", e);
                }
                completions.unregister(this);
                registered = false;
            }
            if (end == null && remoteClose && credits && !peerClosed) {
                end = new RdmaCmException.Disconnected(Step.TRANSFER,
                        "the peer disconnected without an orderly close (did its process die?)");
                failure = end;
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
            Throwable finalEnd = end;
            cm.execute(() -> release(finalEnd));
        });
    }

    /** Counts posted, uncompleted work requests for the recorder and for the final reckoning. */
    private void outstanding(int delta) {
        outstanding.addAndGet(delta);
        recorder.outstanding(delta);
    }

    /** CM loop: destroys the id, which destroys the QP and everything made through its context. */
    private void release(Throwable end) {
        cm.unregister(id);
        // Work requests never completed (flushed after the last drain) die with the QP.
        outstanding(-outstanding.get());
        try {
            id.close();
        } catch (RuntimeException e) {
            EventLoop.LOG.log(System.Logger.Level.WARNING, "closing " + id + " failed", e);
        }
        if (machine.state() instanceof Disconnecting) {
            if (end != null) {
                machine.fail(end);
            } else {
                machine.teardownComplete();
            }
        }
        disposed.tryEmitEmpty();
    }

    private void failAllOps(Throwable cause) {
        if (ops == null) {
            return;
        }
        for (Op op : ops) {
            if (op.sink != null) {
                MonoSink<Object> s = op.sink;
                op.sink = null;
                s.error(cause);
            }
        }
        Pending p;
        while ((p = pending.poll()) != null) {
            p.sink.error(cause);
        }
    }

    // ---------------------------------------------------------------- completions

    @Override
    public boolean busy() {
        return options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL
                && System.nanoTime() - lastActivity < options.busyPoll().toNanos();
    }

    @Override
    public void drain() {
        if (tornDown || cq.isClosed()) {
            return;
        }
        if (pollAll() > 0) {
            lastActivity = System.nanoTime();
        }
        if (!busy()) {
            // Re-arm, then poll once more: a completion that arrived between the last poll and the
            // arming would otherwise wait for the next one.
            cq.requestNotification(false);
            while (pollAll() > 0) {
                cq.requestNotification(false);
            }
        }
    }

    private int pollAll() {
        int total = 0;
        int n;
        while ((n = cq.poll(wc)) > 0) {
            recorder.pollBatch(n);
            total += n;
            for (int i = 0; i < n; i++) {
                complete(i);
            }
        }
        return total;
    }

    private void complete(int i) {
        long wrId = wc.wrId(i);
        boolean ok = wc.isSuccess(i);
        if ((wrId & RECV_TAG) != 0) {
            outstanding(-1);
            ReceiveSlot slot = slots[(int) (wrId & ~RECV_TAG)];
            if (!ok) {
                slot.state = SLOT_DEAD;
                completionFailed(i);
                return;
            }
            received(slot, i);
            return;
        }
        synchronized (this) {
            Op op = ops[(int) wrId];
            outstanding(-1);
            if (!ok) {
                finishOp(op, null, completionError(i));
                return;
            }
            Kind kind = op.kind;
            long latency = System.nanoTime() - op.started;
            Object result = null;
            switch (kind) {
                case SEND -> {
                    recorder.messageSent(op.bytes);
                    recorder.operationLatency("send", latency);
                }
                case CONTROL -> controlInFlight = false;
                case CLOSE -> cm.execute(this::disconnectAfterClose);
                case CAS, FAA -> {
                    result = atomics.get(ValueLayout.JAVA_LONG, 8L * op.index);
                    recorder.operationLatency(kind == Kind.CAS ? "cas" : "faa", latency);
                }
                case READ -> recorder.operationLatency("read", latency);
                case WRITE -> recorder.operationLatency("write", latency);
                case WRITE_IMM -> recorder.operationLatency("write_imm", latency);
            }
            finishOp(op, result, null);
            drainPending();
            maybeReturnCredits();
        }
    }

    private void disconnectAfterClose() {
        if (machine.state() instanceof Disconnecting) {
            try {
                id.disconnect();
            } catch (RuntimeException e) {
                machine.fail(e);
            }
        }
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
        freeOps.push(op);
        if (s != null) {
            if (error != null) {
                s.error(error);
            } else {
                s.success(result);
            }
        }
    }

    private Throwable completionError(int i) {
        WcStatus status = wc.status(i);
        if (status == WcStatus.WR_FLUSH_ERR) {
            // Flushes follow a failure or a disconnect; report that, not the flush.
            return failure != null ? failure : new RdmaCmException.Disconnected(Step.TRANSFER, "connection closed");
        }
        recorder.completionError(status);
        RdmaCmException.CompletionError e = new RdmaCmException.CompletionError(status,
                "work completion failed: " + wc.describe(i));
        cm.execute(() -> machine.fail(e));
        return e;
    }

    private void completionFailed(int i) {
        completionError(i);
    }

    private void received(ReceiveSlot slot, int i) {
        WcOpcode opcode = wc.opcode(i);
        int len = wc.byteLength(i);
        if (opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
            synchronized (this) {
                held++;
            }
            slot.deliver(0, true, wc.immediateData(i));
            emit(slot, 0);
            return;
        }
        if (credits && wc.hasImmediate(i)) {
            int imm = wc.immediateData(i);
            synchronized (this) {
                creditsAvailable += imm & Wire.CREDITS;
                if ((imm & Wire.CONTROL) != 0) {
                    if ((imm & Wire.CLOSE) != 0) {
                        peerClosed = true;
                    }
                    repost(slot);
                    drainPending();
                    return;
                }
                drainPending();
            }
        }
        synchronized (this) {
            held++;
        }
        slot.deliver(len, false, 0);
        emit(slot, len);
    }

    private void emit(ReceiveSlot slot, int len) {
        recorder.messageReceived(len);
        if (inbound.tryEmitNext(slot).isFailure()) {
            slot.release();
        }
    }

    /** Called by {@link ReceiveSlot#release()} from any thread. */
    void released(ReceiveSlot slot) {
        synchronized (this) {
            if (slot.state != SLOT_DELIVERED) {
                return; // released twice, concurrently: posting the buffer twice would corrupt it
            }
            held--;
            if (tornDown || qp == null || qp.isClosed()) {
                slot.state = SLOT_DEAD;
                return;
            }
            repost(slot);
            if (credits) {
                creditsToReturn++;
                maybeReturnCredits();
            }
        }
    }

    /** Guarded by this. */
    private void repost(ReceiveSlot slot) {
        slot.state = SLOT_POSTED;
        recvBatch.set(0, RECV_TAG | slot.index).sge(0, 0, recvMr, (long) options.bufferSize() * slot.index,
                options.bufferSize());
        try {
            qp.postReceive(recvBatch, 1);
            outstanding(1);
        } catch (RuntimeException e) {
            slot.state = SLOT_DEAD;
        }
    }

    // ---------------------------------------------------------------- sending

    /**
     * Guarded by this. Returns credits with a control message when no data send will carry them soon.
     *
     * <p>A credit update goes out when more than half of the credits granted wait to be returned, or
     * when every credit is here (released or held by the application), so the peer has none and
     * nothing is in flight. This bounds the updates the peer may not have processed yet, whatever its
     * threads are doing: each one in flight carries credits, all of them together at most
     * {@code receiveBuffers}; an update of the second kind is only sent when none is in flight, and
     * after it (at least 1 credit) at most one of the first kind (more than half) fits. With the close,
     * at most 3: {@link #CONTROL_SLOTS}. (A quarter-window threshold let 4 and more pile up at a peer
     * whose completion thread lagged, and they hit RNR: MessagingIT's echo saw 12 RNR NAKs.)
     */
    private void maybeReturnCredits() {
        if (!credits || creditsToReturn == 0 || controlInFlight || closedForSends) {
            return;
        }
        int granted = options.receiveBuffers();
        boolean peerStarved = creditsToReturn + held >= granted;
        boolean dataWillCarry = !pending.isEmpty() && creditsAvailable > 0;
        if ((creditsToReturn > granted / 2 || peerStarved) && !dataWillCarry) {
            postControl(Kind.CONTROL);
        }
    }

    /** Guarded by this. A zero-length SEND_WITH_IMM carrying credits (and the close flag). */
    private boolean postControl(Kind kind) {
        Op op = freeOps.poll();
        if (op == null || qp == null) {
            if (op != null) {
                freeOps.push(op);
            }
            return false;
        }
        int imm = Wire.CONTROL | (kind == Kind.CLOSE ? Wire.CLOSE : 0) | creditsToReturn;
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
        creditsToReturn = 0;
        if (kind == Kind.CONTROL) {
            controlInFlight = true;
        }
        return true;
    }

    private Mono<Object> submit(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a,
                                long b) {
        return Mono.create(sink -> {
            synchronized (this) {
                if (closedForSends || ops == null) {
                    sink.error(new IllegalStateException("the connection is " + (ops == null ? "not established"
                            : "closed") + "; cannot " + kind.name().toLowerCase(java.util.Locale.ROOT)));
                    return;
                }
                if (pending.isEmpty() && tryPost(kind, data, local, remote, a, b, sink)) {
                    return;
                }
                if (needsCredit(kind) && creditsAvailable == 0) {
                    recorder.creditWait();
                }
                pending.add(new Pending(kind, data, local, remote, a, b, sink));
            }
        });
    }

    private boolean needsCredit(Kind kind) {
        return credits && (kind == Kind.SEND || kind == Kind.WRITE_IMM);
    }

    /** Guarded by this. */
    private void drainPending() {
        Pending p;
        while ((p = pending.peek()) != null && tryPost(p.kind, p.data, p.local, p.remote, p.a, p.b, p.sink)) {
            pending.poll();
        }
    }

    /**
     * Guarded by this. Posts the request (the fields of a {@link Pending}) if a send-queue entry, buffer and
     * credit are free; returns whether it was taken (posted, or failed to post and its sink told so).
     */
    private boolean tryPost(Kind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                            MonoSink<Object> sink) {
        if (closedForSends) {
            return false;
        }
        if (freeOps.isEmpty() || (needsCredit(kind) && creditsAvailable == 0)
                || (kind == Kind.SEND && freeSendTop == 0)) {
            return false;
        }
        Op op = freeOps.poll();
        op.kind = kind;
        op.sink = sink;
        op.started = System.nanoTime();
        int flags = SIGNALED;
        switch (kind) {
            case SEND -> {
                int slot = freeSendSlots[--freeSendTop];
                op.sendSlot = slot;
                int len = data.remaining();
                op.bytes = len;
                long off = (long) options.bufferSize() * slot;
                sendView(slot, off).put(0, data, data.position(), len);
                if (len <= qp.maxInlineData()) {
                    flags |= SendFlag.INLINE.value();
                }
                sendBatch.set(0, op.index, credits ? SendOpcode.SEND_WITH_IMM : SendOpcode.SEND, flags);
                if (len > 0) {
                    sendBatch.sge(0, 0, sendMr, off, len);
                }
            }
            case READ -> sendBatch.set(0, op.index, SendOpcode.RDMA_READ, flags)
                    .sge(0, 0, local.segment().address(), (int) remote.length(), lkeyOf(local))
                    .rdma(0, remote.address(), remote.rkey());
            case WRITE, WRITE_IMM -> {
                sendBatch.set(0, op.index, kind == Kind.WRITE ? SendOpcode.RDMA_WRITE
                                : SendOpcode.RDMA_WRITE_WITH_IMM, flags)
                        .sge(0, 0, local.segment().address(), (int) local.length(), lkeyOf(local))
                        .rdma(0, remote.address(), remote.rkey());
                if (kind == Kind.WRITE_IMM) {
                    sendBatch.immediate(0, (int) a);
                }
            }
            case CAS, FAA -> sendBatch.set(0, op.index, kind == Kind.CAS ? SendOpcode.ATOMIC_CMP_AND_SWP
                            : SendOpcode.ATOMIC_FETCH_AND_ADD, flags)
                    .sge(0, 0, atomicMr, 8L * op.index, 8)
                    .atomic(0, remote.address(), remote.rkey(), a, b);
            default -> throw new IllegalStateException(kind.toString());
        }
        if (credits && kind == Kind.SEND) {
            sendBatch.immediate(0, creditsToReturn);
        }
        try {
            qp.postSend(sendBatch, 1);
        } catch (RuntimeException e) {
            finishOp(op, null, e);
            return true;
        }
        outstanding(1);
        if (needsCredit(kind)) {
            creditsAvailable--;
        }
        if (credits && kind == Kind.SEND) {
            creditsToReturn = 0;
        }
        return true;
    }

    /** Guarded by this. The view of send buffer {@code slot} (at {@code offset}); see {@link #sendViews}. */
    private ByteBuffer sendView(int slot, long offset) {
        if (sendViews == null) {
            sendViews = new ByteBuffer[freeSendSlots.length];
        }
        ByteBuffer v = sendViews[slot];
        if (v == null) {
            v = sendBuffers.asSlice(offset, options.bufferSize()).asByteBuffer();
            sendViews[slot] = v;
        }
        return v;
    }

    private static int lkeyOf(RegisteredBuffer b) {
        return ((Registration.View) b).lkey();
    }

    private Mono<Void> checkSize(int len) {
        int max = maxMessageSize();
        if (len > max) {
            return Mono.error(new IllegalArgumentException("message of " + len + " bytes exceeds the largest the "
                    + "peer accepts (" + max + " bytes, its receive buffer size); raise bufferSize on both sides"));
        }
        return null;
    }

    @Override
    public Mono<Void> send(ByteBuffer message) {
        Mono<Void> tooBig = checkSize(message.remaining());
        if (tooBig != null) {
            return tooBig;
        }
        return submit(Kind.SEND, message, null, null, 0, 0).then().publishOn(options.scheduler());
    }

    @Override
    public Mono<Void> send(MemorySegment message) {
        if (message.byteSize() > Integer.MAX_VALUE) {
            return Mono.error(new IllegalArgumentException("message too large"));
        }
        return send(message.asByteBuffer());
    }

    @Override
    public Mono<Void> send(Publisher<? extends ByteBuffer> messages) {
        return Flux.from(messages).flatMapSequential(this::send, options.sendBuffers()).then();
    }

    @Override
    public Flux<RdmaMessage> receive() {
        return inbound.asFlux().publishOn(options.scheduler(), options.receiveBuffers());
    }

    @Override
    public Flux<byte[]> receiveBytes() {
        return receive().map(m -> {
            try {
                return m.toByteArray();
            } finally {
                m.release();
            }
        });
    }

    // ---------------------------------------------------------------- one-sided

    @Override
    public RegisteredBuffer register(MemorySegment memory, AccessFlags access) {
        ProtectionDomain p = pd;
        if (p == null || closedForSends) {
            throw new IllegalStateException("the connection is not established or closed");
        }
        return new Registration(p.register(memory, access)).view();
    }

    private Mono<Void> oneSided(Kind kind, RegisteredBuffer local, RemoteBuffer remote, long imm) {
        if (!(local instanceof Registration.View)) {
            return Mono.error(new IllegalArgumentException("local must come from register()"));
        }
        long len = kind == Kind.READ ? remote.length() : local.length();
        if (len > local.length() || len > remote.length() || len > Integer.MAX_VALUE) {
            return Mono.error(new IllegalArgumentException("lengths do not fit: local " + local.length()
                    + ", remote " + remote.length()));
        }
        return submit(kind, null, local, remote, imm, 0).then().publishOn(options.scheduler());
    }

    @Override
    public Mono<Void> read(RegisteredBuffer local, RemoteBuffer remote) {
        return oneSided(Kind.READ, local, remote, 0);
    }

    @Override
    public Mono<Void> write(RegisteredBuffer local, RemoteBuffer remote) {
        return oneSided(Kind.WRITE, local, remote, 0);
    }

    @Override
    public Mono<Void> writeWithImmediate(RegisteredBuffer local, RemoteBuffer remote, int immediate) {
        return oneSided(Kind.WRITE_IMM, local, remote, immediate);
    }

    private Mono<Long> atomic(Kind kind, RemoteBuffer remote, long a, long b) {
        if (remote.length() < 8 || (remote.address() & 7) != 0) {
            return Mono.error(new IllegalArgumentException("atomics need an 8-byte aligned remote word: " + remote));
        }
        return submit(kind, null, null, remote, a, b).map(o -> (Long) o).publishOn(options.scheduler());
    }

    @Override
    public Mono<Long> compareAndSwap(RemoteBuffer remote, long expected, long newValue) {
        return atomic(Kind.CAS, remote, expected, newValue);
    }

    @Override
    public Mono<Long> fetchAndAdd(RemoteBuffer remote, long delta) {
        return atomic(Kind.FAA, remote, delta, 0);
    }

    // ---------------------------------------------------------------- the rest of the API

    @Override
    public InetSocketAddress localAddress() {
        return id.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    @Override
    public byte[] peerPrivateData() {
        return peerData.clone();
    }

    @Override
    public int maxMessageSize() {
        return Math.min(options.bufferSize(), peerBufferSize);
    }

    @Override
    public Flux<ConnectionState> states() {
        return machine.states().publishOn(options.scheduler());
    }

    @Override
    public void dispose() {
        // Refuse new operations now, not when the CM loop gets to the close: a send issued after
        // dispose() returned must fail, whatever the loop is busy with.
        closedForSends = true;
        cm.execute(machine::close);
    }

    @Override
    public boolean isDisposed() {
        return disposed.scan(reactor.core.Scannable.Attr.TERMINATED) == Boolean.TRUE;
    }

    @Override
    public void disposeNow(Duration timeout) {
        dispose();
        onDispose().block(timeout);
    }

    @Override
    public Mono<Void> onDispose() {
        return disposed.asMono().publishOn(options.scheduler());
    }

    @Override
    public String toString() {
        return "RdmaConnection[" + role.name().toLowerCase(java.util.Locale.ROOT) + " " + remote + ", "
                + machine.state() + "]";
    }

    // ---------------------------------------------------------------- receive slots and registrations

    /** One receive buffer: posted, or lent to the application as a message. */
    static final class ReceiveSlot implements RdmaMessage {
        final Connection owner;
        final int index;
        final MemorySegment buffer;
        volatile int state = SLOT_POSTED;
        private int length;
        private boolean write;
        private int imm;

        ReceiveSlot(Connection owner, int index, MemorySegment buffer) {
            this.owner = owner;
            this.index = index;
            this.buffer = buffer;
        }

        void deliver(int len, boolean writeNotification, int immediate) {
            length = len;
            write = writeNotification;
            imm = immediate;
            state = SLOT_DELIVERED;
        }

        private void check() {
            if (state != SLOT_DELIVERED) {
                throw new IllegalStateException("message used after release()");
            }
        }

        @Override
        public MemorySegment data() {
            check();
            return buffer.asSlice(0, length);
        }

        @Override
        public int length() {
            check();
            return length;
        }

        @Override
        public ByteBuffer asByteBuffer() {
            return data().asByteBuffer().asReadOnlyBuffer();
        }

        @Override
        public byte[] toByteArray() {
            return data().toArray(ValueLayout.JAVA_BYTE);
        }

        @Override
        public boolean isWriteNotification() {
            check();
            return write;
        }

        @Override
        public int immediate() {
            check();
            return imm;
        }

        @Override
        public void release() {
            if (state == SLOT_DELIVERED) {
                owner.released(this);
            }
        }
    }

    /** A memory region registered through {@link #register}, shared by its views. */
    static final class Registration {
        private final MemoryRegion mr;

        Registration(MemoryRegion mr) {
            this.mr = mr;
        }

        View view() {
            return new View(0, mr.length());
        }

        /** A range of the registration. */
        final class View implements RegisteredBuffer {
            private final long offset;
            private final long length;

            View(long offset, long length) {
                this.offset = offset;
                this.length = length;
            }

            int lkey() {
                return mr.lkey();
            }

            @Override
            public MemorySegment segment() {
                return mr.segment().asSlice(offset, length);
            }

            @Override
            public long length() {
                return length;
            }

            @Override
            public RemoteBuffer remote() {
                if (!mr.access().contains(AccessFlag.REMOTE_READ) && !mr.access().contains(AccessFlag.REMOTE_WRITE)
                        && !mr.access().contains(AccessFlag.REMOTE_ATOMIC)) {
                    throw new IllegalStateException("registered without remote access");
                }
                return new RemoteBuffer(mr.address() + offset, length, mr.rkey());
            }

            @Override
            public RegisteredBuffer slice(long off, long len) {
                if (off < 0 || len < 0 || off + len > length) {
                    throw new IndexOutOfBoundsException("slice [" + off + ", " + (off + len) + ") of " + length);
                }
                return new View(offset + off, len);
            }

            @Override
            public void close() {
                mr.close();
            }
        }
    }
}
