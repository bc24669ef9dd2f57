package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.cq.DeviceResources;
import rdmaflux.cm.internal.cq.Devices;
import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.util.AddressAttempt;
import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.Datagram;
import rdmaflux.cm.DatagramOptions;
import rdmaflux.cm.DatagramPeer;
import rdmaflux.cm.internal.util.Handoff;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaDatagramEndpoint;
import rdmaflux.cm.internal.loop.SharedLoops;
import rdmaflux.cm.internal.memory.Registrations;
import rdmaflux.cm.internal.loop.Timers;
import rdmaflux.cm.Step;

import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.AddressHandleAttributes;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.Errno;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.Gid;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.UdParameters;

/**
 * The {@link RdmaDatagramEndpoint} implementation. The bound id listens for SIDR requests and answers
 * them with the endpoint's QP number; the QP is made by hand (INIT → RTR → RTS with the CM's UDP qkey)
 * in the protection domain of the bound id's device context, so closing that id frees everything. Each
 * {@link #resolve} uses a short-lived id of its own; the address handle it yields is created in the
 * endpoint's PD, never in the resolving id's (which dies with that id). A resolve's timeout is a timer of
 * the CM loop itself, as a connection's step timers are: it fires on the thread that owns the resolving
 * id, with no hop from another scheduler, and is cancelled when the resolve ends.
 *
 * <p>Threads: opening, the bound id's events, resolves and the teardown run on the CM loop; the API
 * (send, {@link #peerOf}, receive, dispose) is called from any thread and hands CM work to that loop; the
 * data path is the {@link UdQueue}'s.
 */
public final class DatagramEndpoint implements RdmaDatagramEndpoint {
    private static final int BACKLOG = 64;

    private final DatagramOptions options;
    private final CmEventLoop cm;
    /** The CM loop's timers: the resolves' timeouts. */
    private final Timers timers;
    private final CompletionLoop completions;
    /** The loops whose protection domain the queue uses. */
    private final Loops loops;
    private final AtomicBoolean disposed = new AtomicBoolean();
    private final Sinks.Empty<Void> closed = Sinks.empty();
    private final Map<Gid, AddressHandle> handles = new ConcurrentHashMap<>();

    // Set on the CM loop before the endpoint is handed out, read-only afterwards.
    private CmId id;
    private volatile UdQueue queue;
    /** The loops' resources on the device, held from the queue's making until the id is destroyed; CM loop. */
    private DeviceResources device;
    private UdQueue.Inbox inbox;
    private InetSocketAddress localAddress;
    private int port;
    private int sgidIndex;

    // CM loop only.
    private boolean open;
    private final List<Resolution> resolutions = new ArrayList<>();

    private DatagramEndpoint(DatagramOptions options, CmEventLoop cm, CompletionLoop completions, Loops loops) {
        this.options = options;
        this.loops = loops;
        this.cm = cm;
        this.timers = cm;
        this.completions = completions;
    }

    public static Mono<RdmaDatagramEndpoint> bind(InetSocketAddress local, DatagramOptions options) {
        java.util.Objects.requireNonNull(local, "local");
        java.util.Objects.requireNonNull(options, "options");
        if (local.isUnresolved() || local.getAddress().isAnyLocalAddress()) {
            return Mono.error(new IllegalArgumentException("bind to the address of an RDMA interface, not " + local
                    + ": the address picks the device"));
        }
        return Handoff.guard(SharedLoops.<RdmaDatagramEndpoint>create((sink, loops) -> {
            CmEventLoop cm = loops.cm();
            CompletionLoop completions = loops.completions();
            DatagramEndpoint ep = new DatagramEndpoint(options, cm, completions, loops.loops());
            cm.execute(() -> ep.open(local, sink));
        }).publishOn(options.scheduler()), RdmaDatagramEndpoint.class, RdmaDatagramEndpoint::dispose);
    }

    /** CM loop. */
    private void open(InetSocketAddress local, MonoSink<RdmaDatagramEndpoint> sink) {
        assert cm.inLoop() : "CM loop only";
        try {
            id = cm.channel().createId(PortSpace.UDP);
            id.bind(local);
            RdmaContext ctx = id.context();
            port = id.portNumber();
            QpConnectOptions qpOptions = QpConnectOptions.builder().port(port).qkey(UdQueue.RDMA_UDP_QKEY).build();
            device = Devices.of(loops).device(id).hold();
            Registrations domain = device.domain();
            queue = new UdQueue(ctx, id.sharedContext(), domain, port, (pd, attributes) -> {
                QueuePair qp = pd.createQueuePair(attributes);
                qp.activateDatagram(qpOptions, 0);
                return qp;
            }, options.receiveBuffers(), options.sendBuffers(), options.scheduler(), completions, options.recorder());
            sgidIndex = gidIndexOf(ctx, port, local.getAddress());
            queue.postInitialReceives();
            inbox = queue.addInbox();
            cm.register(id, this::onListenerEvent);
            id.listen(BACKLOG);
            localAddress = id.localAddress();
            queue.start();
            open = true;
        } catch (RuntimeException e) {
            if (id != null) {
                cm.unregister(id);
            }
            release(e);
            sink.error(e);
            return;
        }
        // A subscriber that cancelled meanwhile gets nothing: the Handoff in bind() disposes the endpoint.
        Handoff.success(sink, this);
    }

    /** The source GID index for replies: the entry holding our own address (IPv4-mapped for IPv4). */
    private static int gidIndexOf(RdmaContext ctx, int port, InetAddress address) {
        for (RdmaContext.IndexedGid g : ctx.gidTable(port)) {
            if (g.gid().toInetAddress().equals(address)) {
                return g.index();
            }
        }
        throw new IllegalStateException("no GID of " + ctx.deviceName() + " port " + port + " holds "
                + address.getHostAddress());
    }

    /** CM loop: SIDR requests on the bound id; answered with this endpoint's QP number. */
    private void onListenerEvent(CmEvent e) {
        assert cm.inLoop() : "CM loop only";
        if (e.type() == CmEventType.DEVICE_REMOVAL) {
            // Its QP, CQ and buffers keep the device from going (Soft-RoCE waits for them): end with the cause.
            end(RdmaCmException.of(Step.TRANSFER, e.type(), e.status(), null));
            return;
        }
        if (e.type() != CmEventType.CONNECT_REQUEST || e.id() == null) {
            CmLog.LOG.log(Level.DEBUG, "ignoring " + e + " on datagram endpoint " + localAddress);
            return;
        }
        CmId request = e.id();
        try {
            if (open) {
                request.accept(new ConnectionParameters(new byte[0], 0, 0, false, 0, 0, false, queue.qp.number()));
            } else {
                request.reject(new byte[0]);
            }
        } catch (RuntimeException ex) {
            CmLog.LOG.log(Level.WARNING, "answering a resolve on " + localAddress + " failed", ex);
        } finally {
            // A SIDR reply is sent by rdma_accept itself; nothing else happens on this id.
            request.close();
        }
    }

    // ------------------------------------------------------------------ resolving peers

    /** One resolve: address, route, SIDR request, answer. CM loop only. */
    private final class Resolution {
        private final InetSocketAddress remote;
        private MonoSink<DatagramPeer> sink;
        private CmId rid;
        private Disposable timer;
        private Step step = Step.ADDRESS;
        private long started;

        Resolution(InetSocketAddress remote, MonoSink<DatagramPeer> sink) {
            this.remote = remote;
            this.sink = sink;
        }

        void start() {
            assert cm.inLoop() : "CM loop only";
            if (!open) {
                finish(null, new IllegalStateException("the endpoint is disposed"));
                return;
            }
            resolutions.add(this);
            timer = timers.schedule(() -> finish(null, new RdmaCmException.StepTimeout(step, options.resolveTimeout())),
                    options.resolveTimeout().toNanos());
            try {
                rid = cm.channel().createId(PortSpace.UDP);
                cm.register(rid, this::onEvent);
                started = System.nanoTime();
                resolveAddress();
            } catch (RuntimeException e) {
                finish(null, e);
            }
        }

        /** One attempt of the address step (see {@link AddressAttempt}): again after one that timed out. */
        private void resolveAddress() {
            rid.resolveAddress(new InetSocketAddress(localAddress.getAddress(), 0), remote,
                    AddressAttempt.timeout(options.addressTimeout(), System.nanoTime() - started));
        }

        private void onEvent(CmEvent e) {
            assert cm.inLoop() : "CM loop only";
            if (sink == null) {
                return;
            }
            try {
                switch (e.type()) {
                    case ADDR_RESOLVED -> {
                        step = Step.ROUTE;
                        rid.resolveRoute(options.routeTimeout());
                    }
                    case ROUTE_RESOLVED -> {
                        step = Step.CONNECT;
                        rid.connect(ConnectionParameters.DEFAULTS);
                    }
                    case ESTABLISHED -> answered(e.datagram());
                    case ADDR_ERROR -> {
                        if (step == Step.ADDRESS && e.status() == -Errno.ETIMEDOUT
                                && System.nanoTime() - started < options.addressTimeout().toNanos()) {
                            resolveAddress(); // the attempt's probes went unanswered; the step goes on
                        } else {
                            finish(null, RdmaCmException.of(step, e.type(), e.status(), e.privateData()));
                        }
                    }
                    default -> {
                        if (e.type().isError()) {
                            finish(null, RdmaCmException.of(step, e.type(), e.status(), e.privateData()));
                        }
                    }
                }
            } catch (RuntimeException ex) {
                finish(null, ex);
            }
        }

        private void answered(UdParameters ud) {
            if (ud == null || ud.addressHandle() == null) {
                finish(null, new RdmaCmException.ConnectError(Step.CONNECT, 0, "the resolve answer carried no address"));
                return;
            }
            AddressHandleAttributes attributes = ud.addressHandle();
            AddressHandle ah = handles.computeIfAbsent(attributes.dgid(),
                    g -> queue.addressHandle(attributes));
            finish(DatagramValues.peer(DatagramEndpoint.this, remote, ud.qpNumber(), ud.qkey(), ah), null);
        }

        /** CM loop: the resolve ends; its timer is cancelled and its id destroyed. */
        void finish(DatagramPeer peer, Throwable error) {
            assert cm.inLoop() : "CM loop only";
            MonoSink<DatagramPeer> s = sink;
            if (s == null) {
                return;
            }
            sink = null;
            resolutions.remove(this);
            if (timer != null) {
                timer.dispose();
                timer = null;
            }
            if (rid != null) {
                cm.unregister(rid);
                try {
                    rid.close();
                } catch (RuntimeException e) {
                    CmLog.LOG.log(Level.WARNING, "closing " + rid + " failed", e);
                }
            }
            if (error != null) {
                s.error(error);
            } else {
                s.success(peer);
            }
        }
    }

    @Override
    public Mono<DatagramPeer> resolve(InetSocketAddress remote) {
        java.util.Objects.requireNonNull(remote, "remote");
        return Mono.<DatagramPeer>create(sink -> cm.execute(() -> new Resolution(remote, sink).start()))
                .publishOn(options.scheduler());
    }

    @Override
    public DatagramPeer peerOf(Datagram received) {
        Gid gid = received.sourceGid();
        if (gid == null) {
            throw new IllegalArgumentException("the datagram carried no GRH, so its source is unknown");
        }
        if (disposed.get()) {
            throw new IllegalStateException("the endpoint is disposed");
        }
        AddressHandle ah = handles.computeIfAbsent(gid,
                g -> queue.addressHandle(AddressHandleAttributes.global(port, g, sgidIndex)));
        return DatagramValues.peer(this, new InetSocketAddress(received.source(), 0), received.sourceQpn(),
                UdQueue.RDMA_UDP_QKEY, ah);
    }

    // ------------------------------------------------------------------ data

    @Override
    public Mono<Void> send(DatagramPeer peer, ByteBuffer datagram) {
        return send(peer, datagram, false, 0);
    }

    @Override
    public Mono<Void> send(DatagramPeer peer, ByteBuffer datagram, int immediate) {
        return send(peer, datagram, true, immediate);
    }

    private Mono<Void> send(DatagramPeer peer, ByteBuffer datagram, boolean withImmediate, int immediate) {
        if (!DatagramValues.belongsTo(peer, this)) {
            return Mono.error(new IllegalArgumentException(peer + " belongs to another endpoint"));
        }
        if (disposed.get()) {
            return Mono.error(new IllegalStateException("the endpoint is disposed"));
        }
        return queue.send(DatagramValues.addressHandle(peer), peer.qpNumber(), peer.qkey(), datagram, withImmediate, immediate);
    }

    @Override
    public Flux<Datagram> receive() {
        return inbox.flux();
    }

    @Override
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    @Override
    public int qpNumber() {
        return queue.qp.number();
    }

    @Override
    public int qkey() {
        return UdQueue.RDMA_UDP_QKEY;
    }

    @Override
    public int maxDatagramSize() {
        return queue.maxPayload();
    }

    // ------------------------------------------------------------------ closing

    @Override
    public void dispose() {
        end(null);
    }

    /** Any thread: the endpoint ends, orderly ({@code cause} null: disposed) or failed with {@code cause}. */
    private void end(Throwable cause) {
        if (!disposed.compareAndSet(false, true)) {
            return;
        }
        UdQueue q = queue;
        if (q != null) {
            q.markClosed(cause);
        }
        cm.execute(() -> {
            open = false;
            for (Resolution r : new ArrayList<>(resolutions)) {
                r.finish(null, cause != null ? cause : new IllegalStateException("the endpoint is disposed"));
            }
            if (id != null) {
                cm.unregister(id);
            }
            if (queue != null) {
                queue.shutdown(cause, () -> cm.execute(() -> release(cause)));
            } else {
                release(cause);
            }
        });
    }

    /** CM loop: closes the queue's QP, MRs and address handles, then destroys the bound id (the CQ with it). */
    private void release(Throwable cause) {
        assert cm.inLoop() : "CM loop only";
        UdQueue.release(id, queue);
        handles.clear();
        if (device != null) {
            device.release();
            device = null;
        }
        closed.tryEmitEmpty();
    }

    @Override
    public boolean isDisposed() {
        return disposed.get();
    }

    @Override
    public Mono<Void> onDispose() {
        return closed.asMono().publishOn(options.scheduler());
    }

    @Override
    public String toString() {
        return "RdmaDatagramEndpoint[" + localAddress + (disposed.get() ? ", disposed" : "") + "]";
    }
}
