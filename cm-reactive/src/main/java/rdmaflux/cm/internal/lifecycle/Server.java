package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.internal.util.Handoff;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.internal.rc.ReceivePool;
import rdmaflux.cm.internal.memory.Registrations;
import rdmaflux.cm.ServerOptions;
import rdmaflux.cm.SharedReceivePool;
import rdmaflux.cm.Step;
import rdmaflux.cm.internal.rc.Wire;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.PortSpace;

/**
 * The implementation of {@link RdmaServer}: a listening id on the servers' CM loop of the options' loops
 * ({@link Loops#serverCm()}), where its accepted connections' events arrive too. Threads: that loop owns the listener and {@code stopped}; the filter runs on the options' scheduler.
 * The accept queue ({@link ServerOptions#acceptQueue()}) counts each request from its arrival until its
 * connection is delivered to the subscriber, or, when it ends without one, until what was allocated for it
 * is freed.
 */
public final class Server implements RdmaServer {
    /** What a request is rejected with when the filter failed or did not answer in time. */
    private static final AcceptFilter.Decision NO_DECISION = AcceptFilter.Decision.reject(new byte[0]);
    /** The private data of a rejection by a full accept queue. */
    public static final byte[] QUEUE_FULL = ServerOptions.ACCEPT_QUEUE_FULL.getBytes(StandardCharsets.US_ASCII);

    private final ConnectionOptions options;
    private final ServerOptions serverOptions;
    private final AcceptFilter filter;
    private final Loops loops;
    private final CmEventLoop cm;
    private final Sinks.Many<Queued> accepted = Sinks.many().unicast().onBackpressureBuffer();
    private final Sinks.Empty<Void> disposed = Sinks.empty();
    /**
     * Requests in the accept queue: being decided or accepted, or established and not yet delivered to
     * the subscriber. Incremented on the CM loop only (so check-then-increment is safe there); decremented
     * from any thread as each request's {@link Slot} is given back.
     */
    private final AtomicInteger queued = new AtomicInteger();
    private CmId listener;
    private InetSocketAddress address;
    private boolean stopped;
    /** The Reactor context of the bind's subscriber, handed to the recorder for each accept; set once at bind. */
    private reactor.util.context.ContextView context = reactor.util.context.Context.empty();
    /** The shared receive pool's options, or null. */
    private final SharedReceivePool poolSpec;
    /**
     * Requests waiting for the accept filter, each with its decision's subscription; CM loop only. Whoever
     * removes a request from here settles it: its decision, or the server's dispose, which rejects it at once
     * rather than leaving its CM id to the accept timeout.
     */
    private final java.util.Map<Slot, Deciding> deciding = new java.util.HashMap<>();
    /** The shared receive pool on each device, made on its first connection; CM loop only. */
    private final java.util.Map<Registrations, ReceivePool> pools = new java.util.HashMap<>();

    private Server(ConnectionOptions options, ServerOptions serverOptions, AcceptFilter filter, Loops loops) {
        poolSpec = serverOptions.sharedReceivePool().orElse(null);
        if (poolSpec != null && options.protocol() != ConnectionOptions.Protocol.CREDITS) {
            throw new IllegalArgumentException("a shared receive pool needs ConnectionOptions.Protocol.CREDITS: "
                    + "its flow control is what keeps the pool from running dry");
        }
        // On a pool, each connection grants its quota: its hello, window and prefetch follow.
        this.options = poolSpec == null ? options : options.toBuilder().receiveBuffers(poolSpec.quota()).build();
        this.serverOptions = serverOptions;
        this.filter = filter;
        this.loops = loops;
        this.cm = loops.serverCm();
    }

    public static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter,
                                 ServerOptions serverOptions) {
        java.util.Objects.requireNonNull(filter, "filter");
        java.util.Objects.requireNonNull(serverOptions, "serverOptions");
        return Handoff.guard(Mono.<RdmaServer>create(sink -> {
            Server s;
            try {
                s = new Server(options, serverOptions, filter, (Loops) options.loops());
                s.context = sink.contextView();
                s.loops.track(s);
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            CmEventLoop cm = s.cm;
            cm.execute(() -> {
                try {
                    s.listener = cm.channel().createId(PortSpace.TCP);
                    s.listener.setReuseAddress(true);
                    s.listener.bind(address);
                    s.listener.listen(serverOptions.acceptQueue());
                    s.address = s.listener.localAddress();
                    cm.register(s.listener, s::onCmEvent);
                    Handoff.success(sink, s);
                } catch (RuntimeException e) {
                    if (s.listener != null) {
                        s.listener.close();
                    }
                    s.loops.untrack(s);
                    sink.error(e);
                }
            });
        }).publishOn(options.scheduler()), RdmaServer.class, RdmaServer::dispose);
    }

    /** CM loop: connect requests for the listener. */
    private void onCmEvent(CmEvent e) {
        assert cm.inLoop() : "the servers' CM loop only";
        options.recorder().cmEvent(e.type());
        if (e.type() == CmEventType.DEVICE_REMOVAL) {
            // A listener bound to the device's address: its id keeps librdmacm's context of the device open,
            // and so the kernel's removal waiting (Soft-RoCE). It cannot listen on the device added again
            // (a new device to the CM), so the server ends, telling its subscriber why. A wildcard listener
            // is on no device and sees no such event: it keeps listening, on the device added again too.
            stop(RdmaCmException.of(Step.ACCEPT, e.type(), e.status(), null));
            return;
        }
        if (e.type() != CmEventType.CONNECT_REQUEST) {
            return; // a listener sees nothing else on RoCE
        }
        CmId id = e.id();
        if (stopped) {
            reject(id, new byte[0]);
            return;
        }
        if (queued.get() >= serverOptions.acceptQueue()) {
            // The overflow policy: refuse at once, before the filter or any allocation.
            CmLog.LOG.log(System.Logger.Level.DEBUG, () -> "accept queue full (" + serverOptions.acceptQueue()
                    + "): rejecting " + id.peerAddress());
            reject(id, QUEUE_FULL);
            return;
        }
        byte[] raw = e.privateData();
        Wire.Hello hello = Wire.parse(raw);
        if (hello == null && options.protocol() == ConnectionOptions.Protocol.CREDITS) {
            // Refused before the filter or any allocation: nothing of the request outlives this.
            RdmaCmException.ProtocolViolation v = PeerHello.notAHello(Step.ACCEPT, raw);
            CmLog.LOG.log(System.Logger.Level.WARNING, "rejecting " + id.peerAddress() + ": " + v.getMessage());
            options.recorder().attempt(true, id.peerAddress(), context)
                    .connectOutcome(true, RdmaRecorder.Outcome.FAILURE, v);
            // Says why, so the client fails with a Rejected that names the fix instead of a bare refusal.
            reject(id, PeerHello.refusal(raw));
            return;
        }
        queued.incrementAndGet();
        Slot slot = new Slot();
        if (filter == AcceptFilter.ACCEPT_ALL) {
            // Runs no user code and never waits: decided here, without the hop to the options' scheduler
            // and back, and without an accept timer (one of each per request on a busy CM loop).
            decided(e, hello, AcceptFilter.Decision.accept(), slot);
            return;
        }
        byte[] appData = hello != null ? hello.applicationData() : raw;
        Duration timeout = options.timeout(Step.ACCEPT);
        // The accept timeout runs on the CM loop's timer, not on the options' scheduler: that one need
        // not keep time (Schedulers.immediate() cannot, and there every request was rejected at once).
        reactor.core.Disposable.Swap subscription = reactor.core.Disposables.swap();
        deciding.put(slot, new Deciding(id, subscription));
        subscription.update(decision(filter, id.peerAddress(), appData, timeout == null ? null : cm.delay(timeout),
                options.scheduler()).subscribe(d -> cm.execute(() -> {
                    if (deciding.remove(slot) != null) {
                        decided(e, hello, d, slot);
                    }
                })));
    }

    /**
     * The filter's decision about one request, made off the CM thread: the filter is subscribed to on
     * {@code scheduler}. Never fails and never stays silent: a filter that throws, returns {@code null},
     * errors, completes empty or does not answer before {@code deadline} becomes a rejection.
     *
     * @param deadline emits when the accept step's timeout has passed, or {@code null} for no timeout
     * @param scheduler where the filter runs; need not be able to schedule with a delay
     */
    public static Mono<AcceptFilter.Decision> decision(AcceptFilter filter, InetSocketAddress peer, byte[] data,
                                                Mono<?> deadline, Scheduler scheduler) {
        Mono<AcceptFilter.Decision> d = Mono.defer(() -> filter.decideAsync(peer, data)).subscribeOn(scheduler);
        if (deadline != null) {
            d = d.timeout(deadline, Mono.error(() -> new java.util.concurrent.TimeoutException(
                    "the filter did not decide within the accept timeout (ConnectionOptions.timeout(Step.ACCEPT))")));
        }
        return d.switchIfEmpty(Mono.error(() -> new IllegalStateException("the filter completed without a decision")))
                .onErrorResume(err -> {
                    CmLog.LOG.log(System.Logger.Level.WARNING, "accept filter failed for " + peer
                            + ", rejecting: " + err);
                    return Mono.just(NO_DECISION);
                });
    }

    private void decided(CmEvent request, Wire.Hello hello, AcceptFilter.Decision d, Slot slot) {
        assert cm.inLoop() : "the servers' CM loop only";
        CmId id = request.id();
        if (stopped || !d.isAccept()) {
            reject(id, d.rejectData());
            slot.release();
            return;
        }
        try {
            Mono<Void> freed = ConnectionLifecycle.accept(request, hello, options, loops, cm,
                    new EstablishedSink(slot), poolSpec == null ? null : this::pool, context);
            // A request that ends without reaching the subscriber keeps its place until everything
            // allocated for it is freed, so the queue bounds memory, not just requests.
            freed.subscribe(null, err -> slot.release(), slot::release);
        } catch (RuntimeException ex) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "rejecting " + id.peerAddress() + ": " + ex.getMessage());
            reject(id, new byte[0]);
            slot.release();
        }
    }

    /** CM loop: the pool on a device, made on its first connection. */
    private ReceivePool pool(Registrations domain) {
        assert cm.inLoop() : "the servers' CM loop only";
        return pools.computeIfAbsent(domain, d -> new ReceivePool(d.pd(), poolSpec, options.bufferSize()));
    }

    /** {@return the shared receive pools, by device, for tests} */
    java.util.Collection<ReceivePool> poolsForTest() {
        return pools.values();
    }

    private static void reject(CmId id, byte[] data) {
        try {
            id.reject(data);
        } catch (RuntimeException e) {
            // The client may be gone already (it gave up); the id is closed all the same.
            CmLog.LOG.log(System.Logger.Level.DEBUG, () -> "rejecting " + id + " failed: " + e.getMessage());
        } finally {
            id.close();
        }
    }

    /** {@return requests in the accept queue now (for tests)} */
    int queued() {
        return queued.get();
    }

    /** One request's place in the accept queue, given back once whichever way the request ends. */
    private final class Slot {
        private final AtomicBoolean held = new AtomicBoolean(true);

        void release() {
            if (held.compareAndSet(true, false)) {
                queued.decrementAndGet();
            }
        }
    }

    /** A request the accept filter is deciding: its CM id and the decision's subscription. */
    private record Deciding(CmId id, reactor.core.Disposable subscription) {
    }

    /** An established connection waiting for the subscriber's demand, still holding its place. */
    private record Queued(RdmaConnection connection, Slot slot) {
        /** Taken by the subscriber: the place is free. */
        RdmaConnection take() {
            slot.release();
            return connection;
        }

        /**
         * Reaches no subscriber (it cancelled, or the server completed): nobody else would close it. Its
         * place comes back once it is closed.
         */
        void drop() {
            connection.dispose();
        }
    }

    /** Receives each accepted connection once it is established (or its failure, which is dropped). */
    private final class EstablishedSink implements reactor.core.publisher.MonoSink<RdmaConnection> {
        private final Slot slot;

        EstablishedSink(Slot slot) {
            this.slot = slot;
        }

        @Override
        public void success() {
        }

        @Override
        public void success(RdmaConnection c) {
            Queued q = new Queued(c, slot);
            if (accepted.tryEmitNext(q).isFailure()) {
                q.drop();
            }
        }

        @Override
        public void error(Throwable e) {
            // Its place comes back when its resources are freed (onDispose).
            CmLog.LOG.log(System.Logger.Level.DEBUG, "accept failed", e);
        }

        @Override
        public reactor.util.context.Context currentContext() {
            return reactor.util.context.Context.empty();
        }

        @Override
        public reactor.util.context.ContextView contextView() {
            return reactor.util.context.Context.empty();
        }

        @Override
        public reactor.core.publisher.MonoSink<RdmaConnection> onRequest(java.util.function.LongConsumer consumer) {
            return this;
        }

        @Override
        public reactor.core.publisher.MonoSink<RdmaConnection> onCancel(reactor.core.Disposable d) {
            return this;
        }

        @Override
        public reactor.core.publisher.MonoSink<RdmaConnection> onDispose(reactor.core.Disposable d) {
            return this;
        }
    }

    @Override
    public InetSocketAddress address() {
        return address;
    }

    @Override
    public Flux<RdmaConnection> connections() {
        // A connection counts in the accept queue until the subscriber's demand lets it through here,
        // whatever publishOn prefetched: that demand is the backpressure. One that reaches no subscriber
        // (it cancelled with some still queued) would stay open with nobody to close it: close it instead.
        return accepted.asFlux().publishOn(options.scheduler())
                .doOnDiscard(Queued.class, Queued::drop)
                .map(Queued::take);
    }

    @Override
    public void dispose() {
        cm.execute(() -> stop(null));
    }

    /** CM loop: stops listening, once; {@code connections()} completes, or fails with {@code cause}. */
    private void stop(Throwable cause) {
        assert cm.inLoop() : "the servers' CM loop only";
        if (stopped) {
            return;
        }
        stopped = true;
        cm.unregister(listener);
        listener.close();
        deciding.forEach((slot, d) -> {
            d.subscription().dispose();
            reject(d.id(), new byte[0]);
            slot.release();
        });
        deciding.clear();
        // The SRQs and regions go once the last connection using them is gone.
        pools.values().forEach(ReceivePool::close);
        if (cause != null) {
            accepted.tryEmitError(cause);
        } else {
            accepted.tryEmitComplete();
        }
        disposed.tryEmitEmpty();
        loops.untrack(this);
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
        return disposed.asMono();
    }

    @Override
    public String toString() {
        return "RdmaServer[" + address + "]";
    }
}
