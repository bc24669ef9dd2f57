package rdmaflux.cm;

import java.net.InetSocketAddress;
import java.time.Duration;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.PortSpace;

/**
 * The implementation of {@link RdmaServer}: a listening id on the CM loop of the options' loops.
 * Threads: the CM loop owns the listener and {@code stopped}; the filter runs on the options' scheduler.
 */
final class Server implements RdmaServer {
    private final ConnectionOptions options;
    private final AcceptFilter filter;
    private final Loops loops;
    private final CmEventLoop cm;
    private final Sinks.Many<RdmaConnection> accepted = Sinks.many().unicast().onBackpressureBuffer();
    private final Sinks.Empty<Void> disposed = Sinks.empty();
    private CmId listener;
    private InetSocketAddress address;
    private boolean stopped;

    private Server(ConnectionOptions options, AcceptFilter filter, Loops loops) {
        this.options = options;
        this.filter = filter;
        this.loops = loops;
        this.cm = loops.cm();
    }

    static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter) {
        return Handoff.guard(Mono.<RdmaServer>create(sink -> {
            Server s;
            try {
                s = new Server(options, filter, (Loops) options.loops());
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
                    s.listener.listen(64);
                    s.address = s.listener.localAddress();
                    cm.register(s.listener, s::onCmEvent);
                    sink.success(s);
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
        options.recorder().cmEvent(e.type());
        if (e.type() != CmEventType.CONNECT_REQUEST) {
            return; // a listener sees nothing else on RoCE; DEVICE_REMOVAL ends nothing we own here
        }
        CmId id = e.id();
        if (stopped) {
            reject(id, new byte[0]);
            return;
        }
        byte[] raw = e.privateData();
        Wire.Hello hello = Wire.parse(raw);
        byte[] appData = hello != null ? hello.applicationData() : raw;
        InetSocketAddress peer = id.peerAddress();
        // The filter is application code: run it off the CM thread, then come back to accept.
        Mono.fromCallable(() -> filter.decide(peer, appData))
                .subscribeOn(options.scheduler())
                .subscribe(d -> cm.execute(() -> decided(e, hello, d)),
                        err -> cm.execute(() -> reject(id, new byte[0])));
    }

    private void decided(CmEvent request, Wire.Hello hello, AcceptFilter.Decision d) {
        CmId id = request.id();
        if (stopped || !d.isAccept()) {
            reject(id, d.rejectData());
            return;
        }
        try {
            ConnectionLifecycle.accept(request, hello, options, loops, new EstablishedSink());
        } catch (RuntimeException ex) {
            EventLoop.LOG.log(System.Logger.Level.WARNING, "rejecting " + id.peerAddress() + ": " + ex.getMessage());
            reject(id, new byte[0]);
        }
    }

    private static void reject(CmId id, byte[] data) {
        try {
            id.reject(data);
        } finally {
            id.close();
        }
    }

    /** Receives each accepted connection once it is established (or its failure, which is dropped). */
    private final class EstablishedSink implements reactor.core.publisher.MonoSink<RdmaConnection> {
        @Override
        public void success() {
        }

        @Override
        public void success(RdmaConnection c) {
            if (accepted.tryEmitNext(c).isFailure()) {
                c.dispose();
            }
        }

        @Override
        public void error(Throwable e) {
            EventLoop.LOG.log(System.Logger.Level.DEBUG, "accept failed", e);
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
        // A connection that was established but reaches no subscriber (it cancelled with some still
        // queued) would stay open with nobody to close it: close it instead.
        return accepted.asFlux().publishOn(options.scheduler())
                .doOnDiscard(RdmaConnection.class, RdmaConnection::dispose);
    }

    @Override
    public void dispose() {
        cm.execute(() -> {
            if (stopped) {
                return;
            }
            stopped = true;
            cm.unregister(listener);
            listener.close();
            accepted.tryEmitComplete();
            disposed.tryEmitEmpty();
            loops.untrack(this);
        });
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
