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
import rdmaflux.cm.internal.util.AddressAttempt;
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
public final class ConnectionLifecycle implements QueueOwner, reactor.core.Disposable {
    /** The public face handed to the application, made once established; CM loop. */
    private Connection api;
    private final Role role;
    private final ConnectionOptions options;
    /** Set once before the connection is published, on the thread that creates it. */
    private RdmaRecorder recorder;
    private final Loops loops;
    private final CmEventLoop cm;
    private final CompletionLoop completions;
    private final ConnectionStateMachine machine;
    private final boolean credits;
    private final Sinks.Empty<Void> disposed = Sinks.empty();

    private MonoSink<RdmaConnection> connectSink;
    /** Client: set by whichever comes first, handing the connect result over or the subscriber's cancel. */
    private final AtomicBoolean settled = new AtomicBoolean();
    /** Set on the CM loop before the connection is handed out. */
    private CmId id;
    private InetSocketAddress remote;
    private long stepStarted;
    /** What the peer's hello said; CM loop, handed to the facade in {@link Established}. */
    private PeerHello peer = PeerHello.NONE;
    /** Server: the connect request's transport parameters (from this side's point of view). */
    private ConnectionParameters request;
    /** The data path, from CONNECTING/ACCEPTING on; read by application threads ({@link #dispose()}). */
    private volatile RcQueue queue;
    /** The loops' resources on the id's device, held from the queue's making until the id is destroyed; CM loop. */
    private DeviceResources device;
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
    }

    private static boolean busyPolls(ConnectionOptions options) {
        return options.completionMode() == ConnectionOptions.CompletionMode.BUSY_POLL;
    }

    /** A step timer fired on the CM loop. */
    private void onTimer(Step step) {
        assert cm.inLoop() : "CM loop only";
        run(machine.onTimeout(step));
    }

    // ---------------------------------------------------------------- setup

    /**
     * Client: {@code RdmaConnection.connect}.
     *
     * @param remote the server's address
     * @param options the connection's options
     * @return the connection once established
     */
    public static Mono<RdmaConnection> connect(InetSocketAddress remote, ConnectionOptions options) {
        return Handoff.guard(Mono.<RdmaConnection>create(sink -> {
            ConnectionLifecycle c;
            try {
                Loops loops = (Loops) options.loops();
                c = new ConnectionLifecycle(Role.CLIENT, options, loops, loops.cm());
                c.loops.track(c);
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            CmEventLoop cm = c.cm;
            c.connectSink = sink;
            c.remote = remote;
            c.recorder = options.recorder().attempt(false, remote, sink.contextView());
            sink.onCancel(() -> {
                // Either the subscriber gets the connection or the cancel closes it, never neither:
                // whichever of delivery and cancel sets `settled` first owns the connection.
                if (c.settled.compareAndSet(false, true)) {
                    c.dispose();
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
     * @param context the Reactor context of the server's bind, for the recorder's {@code attempt}
     * @return ends once everything allocated for the connection was freed
     * @throws IllegalStateException when the loops are disposed (the caller rejects the request)
     */
    static Mono<Void> accept(CmEvent request, Wire.Hello hello, ConnectionOptions options, Loops loops,
                             CmEventLoop cm, MonoSink<RdmaConnection> established,
                             java.util.function.Function<Registrations, ReceivePool> pools,
                             reactor.util.context.ContextView context) {
        assert cm.inLoop() : "the server's CM loop only";
        ConnectionLifecycle c = new ConnectionLifecycle(Role.SERVER, options, loops, cm);
        c.pools = pools;
        c.id = request.id();
        c.connectSink = established;
        c.remote = request.id().peerAddress();
        c.request = request.connection();
        c.peer = PeerHello.of(options, hello, request.privateData(), Step.ACCEPT);
        loops.track(c);
        // Only once nothing above can throw: the attempt begun here always reaches connectOutcome.
        c.recorder = options.recorder().attempt(true, c.remote, context);
        c.cm.register(c.id, c::onCmEvent);
        c.run(c.machine.start());
        return c.disposed.asMono();
    }

    /**
     * Ends the connect Mono (CM loop). The client's subscriber is told on the options' scheduler, and
     * only if it did not cancel first ({@link #settled}); the server's sink is the server's own,
     * non-blocking one.
     */
    private void settle(MonoSink<RdmaConnection> s, Throwable error) {
        Connection api = this.api;
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
        assert cm.inLoop() : "CM loop only";
        recorder.cmEvent(e.type());
        if (e.type() == CmEventType.ESTABLISHED && role == Role.CLIENT && machine.state() == ConnectionState.CONNECTING) {
            try {
                peer = PeerHello.of(options, credits ? Wire.parse(e.privateData()) : null, e.privateData(), Step.CONNECT);
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
        assert cm.inLoop() : "CM loop only: the machine is never entered from another thread";
        while (t.hasEffect()) {
            if (t.changed()) { // a repeated step goes on: its duration runs from its start
                long now = System.nanoTime();
                Step step = t.completedStep();
                if (step != null) {
                    recorder.stepDuration(step, now - stepStarted);
                }
                stepStarted = now;
            }
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
                    id.resolveAddress(null, remote,
                            AddressAttempt.timeout(options.timeout(Step.ADDRESS), System.nanoTime() - stepStarted));
                } catch (RdmaException e) {
                    // rdma_resolve_addr fails at once (ENETUNREACH, EADDRNOTAVAIL, ...) when the kernel
                    // already knows there is no route: the same failure as a later ADDR_ERROR event.
                    throw StepErrors.of(Step.ADDRESS, CmEventType.ADDR_ERROR, e);
                }
            }
            case RESOLVE_ROUTE -> {
                try {
                    id.resolveRoute(options.timeout(Step.ROUTE));
                } catch (RdmaException e) {
                    throw StepErrors.of(Step.ROUTE, CmEventType.ROUTE_ERROR, e);
                }
            }
            case CONNECT -> {
                ConnectionParameters p = TransportParameters.forConnect(options,
                        TransportParameters.limits(id.context()), PeerHello.ours(options));
                device = Devices.of(loops).device(id).hold();
                queue = new RcQueue(id, device, options, recorder, completions, this, null);
                setAckTimeout();
                id.connect(p);
            }
            case ACCEPT -> {
                try {
                    ConnectionParameters p = TransportParameters.forAccept(options,
                            TransportParameters.limits(id.context()), request, PeerHello.ours(options));
                    device = Devices.of(loops).device(id).hold();
                    queue = new RcQueue(id, device, options, recorder, completions, this,
                            pools == null ? null : pools.apply(device.domain()));
                    setAckTimeout();
                    id.accept(p);
                } catch (rdmaflux.verbs.RdmaResourceException e) {
                    throw e; // this side is short of something: said as such (ENOMEM and its remedy)
                } catch (RdmaException e) {
                    // A peer that gave up on its request (it destroyed its id: the CM has its reject)
                    // makes rdma_create_qp or rdma_accept fail at once (EINVAL): the handshake failed.
                    throw StepErrors.of(Step.ACCEPT, CmEventType.CONNECT_ERROR, e);
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
                queue.sends().closeForSends();
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

    /** Before connect/accept, which move the QP to RTS with it. */
    private void setAckTimeout() {
        if (options.ackTimeout() != ConnectionOptions.DEVICE_DEFAULT) {
            id.setAckTimeout(options.ackTimeout());
        }
    }

    private void established() {
        recorder.connectOutcome(role == Role.SERVER, RdmaRecorder.Outcome.SUCCESS, (Throwable) null);
        recorder.activeConnections(1);
        queue.start(peer.credits(), peer.largeMessages());
        api = new Connection(this, new Established(queue, id.localAddress(), remote, peer.applicationData(),
                peer.bufferSize(), role), options);
        if (options.portDownPolicy() == ConnectionOptions.PortDownPolicy.FAIL) {
            String name = id.context().deviceName();
            int port = id.portNumber();
            portWatch = device.events()
                    .filter(e -> e.type() == rdmaflux.verbs.AsyncEventType.PORT_ERR && e.portNumber() == port)
                    .next()
                    .subscribe(e -> cm.execute(() -> run(machine.fail(new RdmaCmException.PortDown(name, port)))),
                            e -> CmLog.LOG.log(System.Logger.Level.WARNING, "watching " + name
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
        assert cm.inLoop() : "CM loop only";
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
                    : RdmaRecorder.Outcome.FAILURE, cause);
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
        assert cm.inLoop() : "CM loop only";
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
        if (device != null) {
            device.release(); // after the hops above: a removed device's channels close after its CQs
        }
        if (machine.state() instanceof Disconnecting) {
            run(end != null ? machine.fail(end) : machine.teardownComplete());
        }
        if (busyPolls(options)) {
            completions.busyPollers(-1);
        }
        disposed.tryEmitEmpty();
        loops.untrack(this);
    }

    /**
     * The application or the loops asked to close (any thread): new operations are refused at once, not
     * when the CM loop gets to the close; the machine hears of it on the CM loop.
     */
    @Override
    public void dispose() {
        RcQueue q = queue;
        if (q != null) {
            q.sends().closeForSends();
        }
        cm.execute(() -> run(machine.close()));
    }

    /** {@return whether everything the connection allocated was freed} */
    @Override
    public boolean isDisposed() {
        return disposed.scan(reactor.core.Scannable.Attr.TERMINATED) == Boolean.TRUE;
    }

    /** {@return ends once everything the connection allocated was freed; on the CM loop} */
    Mono<Void> onDispose() {
        return disposed.asMono();
    }

    /** {@return the connection's states, current first} */
    reactor.core.publisher.Flux<ConnectionState> states() {
        return machine.states();
    }

    /** {@return the connection's state now} */
    ConnectionState state() {
        return machine.state();
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
        assert cm.inLoop() : "CM loop only";
        afterIdClosed.add(task);
    }

    @Override
    public boolean onCmLoop() {
        return cm.inLoop();
    }
}
