package rdmaflux.samples.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.EnumSet;

import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.ExtendedSendQueue;
import rdmaflux.verbs.GidEntry;
import rdmaflux.verbs.GidType;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpAttributes;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendOp;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WorkCompletions;

/**
 * A connected pair of RC queue pairs for the verbs-level loops, set up with the connection manager as
 * perftest's {@code -R} does. Both ends live in this process; the tests drive each from its own thread.
 *
 * <p>Each side registers one buffer of two halves of {@code maxSize} bytes: the first is the source of
 * its sends and writes and what the peer reads; the second is where receives, the peer's writes and this
 * side's reads land. The halves' descriptor travels in the CM private data.
 *
 * <p>{@link #openExtended} makes a second pair for the extended post API ({@code ibv_qp_ex}), the same in
 * everything the loops time but the QPs' creation call.
 */
final class VerbsLink implements AutoCloseable {
    /** Send queue entries in flight, perftest's default {@code --tx-depth}. */
    static final int TX_DEPTH = 128;
    /** Receives kept posted, perftest's default {@code --rx-depth}. */
    static final int RX_DEPTH = 512;
    /** One send in this many is signaled, perftest's default {@code --cq-mod}. */
    static final int CQ_MOD = 100;
    /** Work request id of every receive. */
    static final long RECV_ID = -1;
    private static final int CQ_ENTRIES = TX_DEPTH + RX_DEPTH + 64;
    private static final int CLIENT_PSN = 0x111;
    private static final int SERVER_PSN = 0x222;

    final Side client;
    final Side server;
    /** The CM pair's channels; {@code null} on an extended pair. */
    private final EventChannel clientChannel;
    private final EventChannel serverChannel;
    /** The extended pair's own device context; {@code null} on a CM pair. */
    private final RdmaContext context;
    private final Arena arena = Arena.ofShared();
    private final Duration step;

    /** One end: its QP, CQ, registered buffer and reusable work request batches. */
    static final class Side {
        /** The connection manager id, {@code null} on an {@linkplain #openExtended extended} pair. */
        final CmId id;
        final QueuePair qp;
        final CompletionQueue cq;
        final MemorySegment buf;
        final MemoryRegion mr;
        final long half;
        final SendRequests send = new SendRequests(1, 1);
        /** One receive of the full half, reposted as each receive completes. */
        final ReceiveRequests recv = new ReceiveRequests(1, 1);
        final WorkCompletions wc = new WorkCompletions(64);
        /** The QP's {@code ibv_wr_*} builder on an extended pair, {@code null} otherwise. */
        final ExtendedSendQueue sq;
        RemoteBuffer peer;

        private Side(CmId id, CompletionQueue cq, QueuePair qp, Arena arena, long maxSize) {
            this.id = id;
            this.cq = cq;
            this.qp = qp;
            sq = id == null ? qp.extendedSendQueue() : null;
            half = maxSize;
            buf = arena.allocate(2 * maxSize, 4096);
            mr = qp.protectionDomain().register(buf, AccessFlags.REMOTE_ALL);
            recv.set(0, RECV_ID).sge(0, 0, mr, half, (int) half);
        }

        /** Posts {@link #RX_DEPTH} receives; the QP must be in INIT or later (Soft-RoCE: EINVAL in RESET). */
        void postInitialReceives() {
            ReceiveRequests initial = new ReceiveRequests(RX_DEPTH, 1);
            for (int i = 0; i < RX_DEPTH; i++) {
                initial.set(i, RECV_ID).sge(i, 0, mr, half, (int) half);
            }
            qp.postReceive(initial, RX_DEPTH);
        }

        /** A side whose QP comes from {@code rdma_create_qp} on the CM id, as perftest's {@code -R} makes it. */
        static Side cm(CmId id, Arena arena, long maxSize) {
            ProtectionDomain pd = id.context().allocateProtectionDomain();
            CompletionQueue cq = id.context().createCompletionQueue(CQ_ENTRIES, null, 0);
            Side side = new Side(id, cq, id.createQueuePair(pd, attributes(cq)), arena, maxSize);
            side.postInitialReceives(); // rdma_create_qp has moved the QP to INIT
            return side;
        }

        /**
         * A side whose QP comes from {@code ibv_create_qp_ex} with SEND and RDMA WRITE as its send operations;
         * in RESET, so its receives are posted once it is connected.
         */
        static Side extended(RdmaContext context, Arena arena, long maxSize) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            CompletionQueue cq = context.createCompletionQueue(CQ_ENTRIES, null, 0);
            QueuePair qp = pd.createExtendedQueuePair(attributes(cq), EnumSet.of(SendOp.SEND, SendOp.RDMA_WRITE));
            return new Side(null, cq, qp, arena, maxSize);
        }

        private static QpInitAttributes attributes(CompletionQueue cq) {
            return QpInitAttributes.builder(QpType.RC).completionQueue(cq).depth(TX_DEPTH + 8, RX_DEPTH + 8).build();
        }

        /** Replaces the receive a completion consumed, so {@link #RX_DEPTH} stay posted. */
        void repostReceive() {
            qp.postReceive(recv, 1);
        }
    }

    private VerbsLink(InetSocketAddress address, long maxSize, Duration step) {
        this.step = step;
        context = null;
        serverChannel = EventChannel.create();
        clientChannel = EventChannel.create();
        try {
            CmId listener = serverChannel.createId(PortSpace.TCP);
            listener.setReuseAddress(true);
            listener.bind(address);
            listener.listen(1);
            InetSocketAddress bound = listener.localAddress();
            CmId id = clientChannel.createId(PortSpace.TCP);
            id.resolveAddress(null, bound, step);
            expect(clientChannel, CmEventType.ADDR_RESOLVED);
            id.resolveRoute(step);
            expect(clientChannel, CmEventType.ROUTE_RESOLVED);
            client = Side.cm(id, arena, maxSize);
            id.connect(params(client));
            CmEvent request = expect(serverChannel, CmEventType.CONNECT_REQUEST);
            server = Side.cm(request.id(), arena, maxSize);
            server.peer = decode(request.connection().privateData());
            request.id().accept(params(server));
            CmEvent established = expect(clientChannel, CmEventType.ESTABLISHED);
            client.peer = decode(established.connection().privateData());
            expect(serverChannel, CmEventType.ESTABLISHED);
        } catch (RuntimeException | Error e) {
            clientChannel.close();
            serverChannel.close();
            arena.close();
            throw e;
        }
    }

    /**
     * Connects a pair over the connection manager.
     *
     * @param address the RDMA interface's address and a port (0 picks one)
     * @param maxSize the largest message the tests will use
     * @param step the longest wait for any connection event
     * @return the connected pair
     */
    static VerbsLink open(InetSocketAddress address, long maxSize, Duration step) {
        return new VerbsLink(address, maxSize, step);
    }

    /**
     * The extended pair: like {@code like}, but its QPs come from {@code ibv_create_qp_ex}, on a context of
     * the same device, for the extended post API. The connection manager only connects QPs it created
     * ({@code rdma_create_qp}), so these two are connected by hand (RESET to RTS) with the settings the
     * connection manager chose for {@code like}'s QPs: port, RoCE v2 GID of the same address, path MTU,
     * ACK timeout, retry and RNR settings, read/atomic depths. The data path the loops time is then the
     * same as on the CM pair apart from the post API.
     */
    private VerbsLink(VerbsLink like, long maxSize) {
        this.step = like.step;
        clientChannel = null;
        serverChannel = null;
        context = Rdma.open(like.client.id.context().deviceName());
        try {
            QpConnectOptions options = optionsOf(like.client, context);
            client = Side.extended(context, arena, maxSize);
            server = Side.extended(context, arena, maxSize);
            client.qp.connect(server.qp.localEndpoint(options, SERVER_PSN), CLIENT_PSN, options);
            server.qp.connect(client.qp.localEndpoint(options, CLIENT_PSN), SERVER_PSN, options);
            // A comparison of two post paths is only fair if nothing else differs: check, not trust, the copy.
            String want = transportSettings(like.client.qp);
            String got = transportSettings(client.qp);
            if (!want.equals(got)) {
                throw new IllegalStateException("the ibv_wr_* pair's QPs differ from the CM pair's: " + got + " vs "
                        + want);
            }
            client.postInitialReceives();
            server.postInitialReceives();
            client.peer = server.mr.toRemoteBuffer();
            server.peer = client.mr.toRemoteBuffer();
        } catch (RuntimeException | Error e) {
            context.close();
            arena.close();
            throw e;
        }
    }

    /**
     * Connects a pair whose QPs post through {@link ExtendedSendQueue}, with the transport settings of a
     * CM-connected pair.
     *
     * @param like the CM pair whose device and QP settings to copy
     * @param maxSize the largest message the tests will use
     * @return the connected pair; its sides' {@link Side#sq} are set
     */
    static VerbsLink openExtended(VerbsLink like, long maxSize) {
        return new VerbsLink(like, maxSize);
    }

    /** {@return connect options with what the connection manager set on {@code side}'s QP} */
    private static QpConnectOptions optionsOf(Side side, RdmaContext context) {
        QpAttributes a = side.qp.query();
        int[] depths = side.qp.readAtomicDepths();
        int port = side.id.portNumber();
        return QpConnectOptions.builder().port(port)
                .gidIndex(gidIndex(context, port, side.id.localAddress().getAddress()))
                .mtu(a.pathMtu() != null ? a.pathMtu() : QpConnectOptions.DEFAULTS.mtu()).timeout(a.timeout())
                .retryCount(a.retryCount()).rnrRetry(a.rnrRetry()).minRnrTimer(a.minRnrTimer())
                .readAtomicDepth(depths[0], depths[1]).build();
    }

    /** {@return the settings the loops depend on, as the device reports them} */
    private static String transportSettings(QueuePair qp) {
        QpAttributes a = qp.query();
        int[] depths = qp.readAtomicDepths();
        return "path MTU " + a.pathMtu() + ", timeout " + a.timeout() + ", retry " + a.retryCount() + ", RNR retry "
                + a.rnrRetry() + ", RNR timer " + a.minRnrTimer() + ", depths " + depths[0] + "/" + depths[1]
                + ", send/recv WRs " + a.maxSendWr() + "/" + a.maxReceiveWr();
    }

    /**
     * {@return the index of the GID the connection manager uses for {@code address}: the RoCE v2 entry
     * holding it, else any entry holding it (InfiniBand, RoCE v1), else the defaults' index}
     */
    private static int gidIndex(RdmaContext context, int port, InetAddress address) {
        GidEntry any = null;
        for (GidEntry e : context.queryGidTable(port)) {
            if (e.gid().toInetAddress().equals(address)) {
                if (e.type() == GidType.ROCE_V2) {
                    return e.index();
                }
                any = any == null ? e : any;
            }
        }
        return any != null ? any.index() : QpConnectOptions.DEFAULTS.gidIndex();
    }

    /** {@return connection parameters carrying {@code side}'s buffer descriptor in the private data} */
    static ConnectionParameters params(Side side) {
        ByteBuffer b = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
        side.mr.toRemoteBuffer().writeTo(b);
        return ConnectionParameters.DEFAULTS.withPrivateData(b.array());
    }

    /** {@return the peer's buffer descriptor from the CM private data} */
    static RemoteBuffer decode(byte[] privateData) {
        // The CM pads private data to its protocol size; the descriptor is the first bytes.
        return RemoteBuffer.readFrom(ByteBuffer.wrap(privateData, 0, RemoteBuffer.ENCODED_SIZE));
    }

    private CmEvent expect(EventChannel ch, CmEventType type) {
        CmEvent e = ch.awaitEvent(step);
        if (e == null || e.type() != type) {
            throw new IllegalStateException("expected " + type + ", got " + (e == null ? "nothing within " + step : e));
        }
        return e;
    }

    @Override
    public void close() {
        if (context != null) {
            try {
                context.close();
            } finally {
                arena.close();
            }
            return;
        }
        try {
            client.id.disconnect();
            CmEvent e = serverChannel.awaitEvent(step);
            if (e != null && e.type() == CmEventType.DISCONNECTED) {
                server.id.disconnect(); // completes the client's disconnect
                clientChannel.awaitEvent(step);
            }
        } finally {
            clientChannel.close();
            serverChannel.close();
            arena.close();
        }
    }
}
