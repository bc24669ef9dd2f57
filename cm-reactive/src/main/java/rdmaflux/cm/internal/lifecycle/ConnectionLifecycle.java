package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.cq.DeviceResources;
import rdmaflux.cm.internal.cq.Devices;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.ConnectionState;
import rdmaflux.cm.internal.util.Handoff;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.internal.rc.QueueOwner;
import rdmaflux.cm.internal.rc.RcQueue;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.internal.rc.ReceivePool;
import rdmaflux.cm.internal.memory.Registrations;
import rdmaflux.cm.Step;
import rdmaflux.cm.internal.rc.Wire;

import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;

import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import rdmaflux.cm.ConnectionState.Disconnecting;
import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Role;
import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Transition;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.RdmaException;

/**
 * The lifecycle of one connection: the state machine's inputs, the CM actions its effects require, and
 * the teardown order (the queue leaves its completion loop, then the id is destroyed). The public API is
 * {@link Connection}, which hands data work to the {@link RcQueue}.
 *
 * <p>Threads: the connection's CM loop ({@link Loops#cm()} for a client, {@link Loops#serverCm()} for an
 * accepted connection; "the CM loop" below) owns the state machine and every field not marked otherwise;
 * all inputs to the machine run there ({@link #run}), one at a time, never re-entered. The completion loop reports
 * to it through {@link QueueOwner} (hopping back to the CM loop). Application-visible signals hop to
 * {@link ConnectionOptions#scheduler()}.
 */
public final class ConnectionLifecycle implements QueueOwner {
    /** The public face handed to the application. */
    final Connection api;
    final Role role;
    final ConnectionOptions options;
    /** Set once before the connection is published, on the thread that creates it. */
    private RdmaRecorder recorder;
    private final Loops loops;
    private final CmEventLoop cm;
    private final CompletionLoop completions;
    final ConnectionStateMachine machine;
    private final boolean credits;
    final Sinks.Empty<Void> disposed = Sinks.empty();

    private MonoSink<RdmaConnection> connectSink;
    /** Client: set by whichever comes first, handing the connect result over or the subscriber's cancel. */
    private final AtomicBoolean settled = new AtomicBoolean();
    /** Set on the CM loop before the connection is handed out. */
    CmId id;
    InetSocketAddress remote;
    private long stepStarted;
    /** Written on the CM loop before the connection is handed out; read by any thread after. */
    volatile byte[] peerData = new byte[0];
    volatile int peerBufferSize;
    private int peerCredits;
    private boolean peerLargeMessages;
    /** Server: the connect request's transport parameters (from this side's point of view). */
    private ConnectionParameters request;
    /** The data path, from CONNECTING/ACCEPTING on; read by application threads. */
    volatile RcQueue queue;
    private boolean tornDown;
    /** The watch on the port's events ({@link ConnectionOptions.PortDownPolicy#FAIL}); CM loop. */
    private reactor.core.Disposable portWatch;
    /** Why the connection ended; written on the CM and completion loops, read by the completion loop. */
    private volatile Throwable failure;
    /** The server's shared receive pool for a device, or {@code null} (or a client): own receive buffers. */
    private java.util.function.Function<Registrations, ReceivePool> pools;
    /** What runs once the id was destroyed ({@link #afterIdClosed}); CM loop. */
    private final java.util.List<Runnable> afterIdClosed = new java.util.ArrayList<>(1);

    private ConnectionLifecycle(Role role, ConnectionOptions options, Loops loops, CmEventLoop cm) {
        this.role = role;
        this.options = options;
        this.recorder = options.recorder();
        this.loops = loops;
        this.cm = cm;
        this.completions = loops.nextCompletionLoop(busyPolls(options));
        this.credits = options.protocol() == ConnectionOptions.Protocol.CREDITS;
        this.machine = new ConnectionStateMachine(role, options.timeouts(), cm::schedule, this::onTimer);
        this.api = new Connection(this, options); // last: it reads nothing else of this
    }

    private static boolean busyPolls(ConnectionOptions options) {
        return options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL;
    }

    /** A step timer fired on the CM loop. */
    private void onTimer(Step step) {
        run(machine.onTimeout(step));
    }

    // ---------------------------------------------------------------- setup

    static Mono<RdmaConnection> connect(InetSocketAddress remote, ConnectionOptions options) {
        return Handoff.guard(Mono.<RdmaConnection>create(sink -> {
            ConnectionLifecycle c;
            try {
                Loops loops = (Loops) options.loops();
                c = new ConnectionLifecycle(Role.CLIENT, options, loops, loops.cm());
                c.loops.track(c.api);
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            CmEventLoop cm = c.cm;
            c.connectSink = sink;
            c.remote = remote;
            c.recorder = options.recorder().forPeer(remote);
            sink.onCancel(() -> {
                // Either the subscriber gets the connection or the cancel closes it, never neither:
                // whichever of delivery and cancel sets `settled` first owns the connection.
                if (c.settled.compareAndSet(false, true)) {
                    c.close();
                }
            });
            cm.execute(() -> {
                if (c.machine.state().isTerminal()) {
                    return; // cancelled before it started: nothing was made
                }
                try {
                    c.id = cm.channel().createId(PortSpace.TCP);
                    cm.register(c.id, c::onCmEvent);
                    if (options.typeOfService() != ConnectionOptions.DEVICE_DEFAULT) {
                        c.id.setTypeOfService(options.typeOfService()); // before the route is resolved
                    }
                } catch (RuntimeException e) {
                    c.run(c.machine.fail(e));
                    return;
                }
                c.run(c.machine.start());
            });
        }), RdmaConnection.class, RdmaConnection::dispose); // delivered to nobody: close it
    }

    /**
     * Server side: called on the server's CM loop with the id of a connect request that was accepted.
     *
     * @param cm the server's CM loop ({@link Loops#serverCm()}), where the id's events arrive
     *
     * @throws IllegalStateException when the loops are disposed (the caller rejects the request)
     */
    static Connection accept(CmEvent request, Wire.Hello hello, ConnectionOptions options, Loops loops,
                             CmEventLoop cm, MonoSink<RdmaConnection> established,
                             java.util.function.Function<Registrations, ReceivePool> pools) {
        ConnectionLifecycle c = new ConnectionLifecycle(Role.SERVER, options, loops, cm);
        c.pools = pools;
        c.id = request.id();
        c.connectSink = established;
        c.remote = request.id().peerAddress();
        c.recorder = options.recorder().forPeer(c.remote);
        c.request = request.connection();
        c.applyHello(hello, request.privateData());
        loops.track(c.api);
        c.cm.register(c.id, c::onCmEvent);
        c.run(c.machine.start());
        return c.api;
    }

    private void applyHello(Wire.Hello hello, byte[] raw) {
        if (credits) {
            if (hello == null) {
                throw notAHello(role == Role.SERVER ? Step.ACCEPT : Step.CONNECT);
            }
            peerData = hello.applicationData();
            peerBufferSize = hello.bufferSize();
            peerCredits = hello.credits();
            peerLargeMessages = hello.largeMessages();
        } else {
            peerData = raw;
            peerBufferSize = options.bufferSize();
        }
    }

    /**
     * The typed failure for private data that is not a valid hello (docs/protocol.md): a peer that is not
     * rdmaflux, or one that breaks the protocol (wrong magic or version, a length past the data, a buffer
     * size of 0 or less).
     *
     * @param step the step the hello arrived in
     * @return the failure
     */
    static RdmaCmException.ProtocolViolation notAHello(Step step) {
        return new RdmaCmException.ProtocolViolation(step, "its private data is not a valid rdmaflux hello (RFX1 "
                + "magic, version 1 or 2, lengths within the data, a positive buffer size): use "
                + "ConnectionOptions.Protocol.RAW to talk to plain verbs applications");
    }

    /**
     * Ends the connect Mono (CM loop). The client's subscriber is told on the options' scheduler, and
     * only if it did not cancel first ({@link #settled}); the server's sink is the server's own,
     * non-blocking one.
     */
    private void settle(MonoSink<RdmaConnection> s, Throwable error) {
        if (role == Role.SERVER) {
            if (error == null) {
                s.success(api);
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
                Handoff.success(s, api); // a cancel racing it: the Handoff releases what the sink dropped
            } else {
                s.error(error);
            }
        });
    }

    // ---------------------------------------------------------------- the lifecycle (CM loop)

    /** Every event for this connection's id. */
    private void onCmEvent(CmEvent e) {
        recorder.cmEvent(e.type());
        if (e.type() == CmEventType.ESTABLISHED && role == Role.CLIENT && machine.state() == ConnectionState.CONNECTING) {
            try {
                applyHello(credits ? Wire.parse(e.privateData()) : null, e.privateData());
            } catch (RuntimeException ex) {
                run(machine.fail(ex));
                return;
            }
        }
        run(machine.onEvent(e.type(), e.status(), e.privateData()));
    }

    /**
     * Performs what a transition requires. An effect that fails becomes the machine's next input, whose
     * transition is performed in turn: the machine is never called from inside an effect.
     */
    private void run(Transition t) {
        while (t.changed()) {
            long now = System.nanoTime();
            Step step = t.from().step();
            if (step != null && step != Step.TRANSFER && !t.to().isTerminal()) {
                recorder.stepDuration(step, now - stepStarted);
            }
            stepStarted = now;
            try {
                perform(t);
                return;
            } catch (RuntimeException ex) {
                t = machine.fail(ex);
            }
        }
    }

    private void perform(Transition t) {
        switch (t.effect()) {
            case RESOLVE_ADDRESS -> {
                try {
                    id.resolveAddress(null, remote, options.timeout(Step.ADDRESS));
                } catch (RdmaException e) {
                    // rdma_resolve_addr fails at once (ENETUNREACH, EADDRNOTAVAIL, ...) when the kernel
                    // already knows there is no route: the same failure as a later ADDR_ERROR event.
                    throw stepError(Step.ADDRESS, CmEventType.ADDR_ERROR, e);
                }
            }
            case RESOLVE_ROUTE -> {
                try {
                    id.resolveRoute(options.timeout(Step.ROUTE));
                } catch (RdmaException e) {
                    throw stepError(Step.ROUTE, CmEventType.ROUTE_ERROR, e);
                }
            }
            case CONNECT -> {
                ConnectionParameters p = TransportParameters.forConnect(options,
                        TransportParameters.limits(id.context()), handshakeData());
                queue = new RcQueue(id, Devices.of(loops).device(id.sharedContext()), options, recorder, completions,
                        this, null);
                setAckTimeout();
                id.connect(p);
            }
            case ACCEPT -> {
                try {
                    ConnectionParameters p = TransportParameters.forAccept(options,
                            TransportParameters.limits(id.context()), request, handshakeData());
                    DeviceResources device = Devices.of(loops).device(id.sharedContext());
                    queue = new RcQueue(id, device, options, recorder, completions, this,
                            pools == null ? null : pools.apply(device.domain()));
                    setAckTimeout();
                    id.accept(p);
                } catch (rdmaflux.verbs.RdmaResourceException e) {
                    throw e; // this side is short of something: said as such (ENOMEM and its remedy)
                } catch (RdmaException e) {
                    // A peer that gave up on its request (it destroyed its id: the CM has its reject)
                    // makes rdma_create_qp or rdma_accept fail at once (EINVAL): the handshake failed.
                    throw stepError(Step.ACCEPT, CmEventType.CONNECT_ERROR, e);
                }
            }
            case ESTABLISHED -> established();
            case DISCONNECT -> {
                if (!queue.sendClose()) {
                    id.disconnect();
                }
                // else: the CLOSE message's completion calls disconnect, so the peer reads it before DREQ.
            }
            case ANSWER_DISCONNECT -> {
                queue.closeForSends();
                try {
                    id.disconnect(); // answers the peer's DREQ
                } catch (RuntimeException e) {
                    // The id may already be gone with the peer; teardown follows regardless.
                }
                teardown(null, t.from(), true);
            }
            case TEARDOWN -> teardown(t.to() instanceof ConnectionState.Failed f ? f.cause() : null, t.from(), false);
            case NONE -> {
            }
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

    private byte[] handshakeData() {
        return credits ? Wire.hello(options.receiveBuffers(), options.bufferSize(), options.privateData())
                : options.privateData();
    }

    /** Before connect/accept, which move the QP to RTS with it. */
    private void setAckTimeout() {
        if (options.ackTimeout() != ConnectionOptions.DEVICE_DEFAULT) {
            id.setAckTimeout(options.ackTimeout());
        }
    }

    private void established() {
        recorder.connectOutcome(role == Role.SERVER, RdmaRecorder.Outcome.SUCCESS, null);
        recorder.activeConnections(1);
        queue.start(peerCredits, peerLargeMessages);
        if (options.portDownPolicy() == ConnectionOptions.PortDownPolicy.FAIL) {
            String device = id.context().deviceName();
            int port = id.portNumber();
            portWatch = Devices.of(loops).device(id.sharedContext()).events()
                    .filter(e -> e.type() == rdmaflux.verbs.AsyncEventType.PORT_ERR && e.portNumber() == port)
                    .next()
                    .subscribe(e -> cm.execute(() -> run(machine.fail(new RdmaCmException.PortDown(device, port)))),
                            e -> CmLog.LOG.log(System.Logger.Level.WARNING, "watching " + device
                                    + " for port events failed", e));
        }
        MonoSink<RdmaConnection> s = connectSink;
        connectSink = null;
        if (s != null) {
            settle(s, null);
        }
    }

    /**
     * Frees everything, once: the queue leaves its completion loop first (final drain, operations
     * failed, {@code receive()} ended), then {@link #release} destroys the id with everything made
     * through it.
     */
    private void teardown(Throwable cause, ConnectionState from, boolean remoteClose) {
        if (tornDown) {
            return;
        }
        tornDown = true;
        failure = cause;
        if (portWatch != null) {
            portWatch.dispose();
        }
        boolean wasEstablished = from instanceof ConnectionState.Established || from instanceof Disconnecting;
        if (wasEstablished) {
            recorder.activeConnections(-1);
        } else {
            recorder.connectOutcome(role == Role.SERVER, cause == null ? RdmaRecorder.Outcome.CANCELLED
                    : RdmaRecorder.Outcome.FAILURE, cause == null ? null : cause.getClass().getSimpleName());
        }
        MonoSink<RdmaConnection> s = connectSink;
        connectSink = null;
        if (s != null) {
            // Closed before it was established without a failure: the subscriber cancelled (then
            // settle() drops this) or the loops were disposed under it, which it must hear of.
            settle(s, cause != null ? cause
                    : new IllegalStateException("closed before it was established (its RdmaLoops were disposed)"));
        }
        RcQueue q = queue;
        if (q == null) {
            cm.execute(() -> release(cause));
            return;
        }
        q.shutdown(cause, remoteClose, end -> {
            if (end != null) {
                failure = end;
            }
            cm.execute(() -> release(end));
        });
    }

    /** Destroys the id (the QP and the CQ with it), then the queue closes its regions in the loops' shared domain. */
    private void release(Throwable end) {
        RcQueue q = queue;
        if (q != null) {
            q.forgetOutstanding();
        }
        if (id != null) {
            cm.unregister(id);
            try {
                id.close();
            } catch (RuntimeException e) {
                CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + id + " failed", e);
            }
        }
        if (q != null) {
            q.afterDestroy(); // the QP is gone: no device reads or writes that memory any more
        }
        for (Runnable task : afterIdClosed) {
            task.run(); // a shared CQ's reservation (its last poll for the QP hops to the completion loop)
        }
        afterIdClosed.clear();
        if (machine.state() instanceof Disconnecting) {
            run(end != null ? machine.fail(end) : machine.teardownComplete());
        }
        if (busyPolls(options)) {
            completions.busyPollers(-1);
        }
        disposed.tryEmitEmpty();
        loops.untrack(api);
    }

    /** The application asked to close (any thread): the machine hears of it on the CM loop. */
    void close() {
        cm.execute(() -> run(machine.close()));
    }

    // ---------------------------------------------------------------- QueueOwner (completion loop)

    @Override
    public void closeSent() {
        cm.execute(() -> {
            if (machine.state() instanceof Disconnecting) {
                try {
                    id.disconnect();
                } catch (RuntimeException e) {
                    run(machine.fail(e));
                }
            }
        });
    }

    @Override
    public void transferFailed(Throwable error) {
        cm.execute(() -> run(machine.fail(error)));
    }

    @Override
    public Throwable failure() {
        return failure;
    }

    @Override
    public void afterIdClosed(Runnable task) {
        afterIdClosed.add(task);
    }
}
