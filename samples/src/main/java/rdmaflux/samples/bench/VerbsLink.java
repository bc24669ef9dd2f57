package rdmaflux.samples.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;

import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WorkCompletions;

/**
 * A connected pair of RC queue pairs for the verbs-level loops, set up with the connection manager as
 * perftest's {@code -R} does. Both ends live in this process; the tests drive each from its own thread.
 *
 * <p>Each side registers one buffer of two halves of {@code maxSize} bytes: the first is the source of
 * its sends and writes and what the peer reads; the second is where receives, the peer's writes and this
 * side's reads land. The halves' descriptor travels in the CM private data.
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

    final Side client;
    final Side server;
    private final EventChannel clientChannel;
    private final EventChannel serverChannel;
    private final Arena arena = Arena.ofShared();
    private final Duration step;

    /** One end: its QP, CQ, registered buffer and reusable work request batches. */
    static final class Side {
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
        RemoteBuffer peer;

        Side(CmId id, Arena arena, long maxSize) {
            this.id = id;
            ProtectionDomain pd = id.context().allocateProtectionDomain();
            cq = id.context().createCompletionQueue(TX_DEPTH + RX_DEPTH + 64, null, 0);
            qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                    .depth(TX_DEPTH + 8, RX_DEPTH + 8).build());
            half = maxSize;
            buf = arena.allocate(2 * maxSize, 4096);
            mr = pd.register(buf, AccessFlags.REMOTE_ALL);
            recv.set(0, RECV_ID).sge(0, 0, mr, half, (int) half);
            ReceiveRequests initial = new ReceiveRequests(RX_DEPTH, 1);
            for (int i = 0; i < RX_DEPTH; i++) {
                initial.set(i, RECV_ID).sge(i, 0, mr, half, (int) half);
            }
            qp.postReceive(initial, RX_DEPTH);
        }

        /** Replaces the receive a completion consumed, so {@link #RX_DEPTH} stay posted. */
        void repostReceive() {
            qp.postReceive(recv, 1);
        }
    }

    private VerbsLink(InetSocketAddress address, long maxSize, Duration step) {
        this.step = step;
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
            client = new Side(id, arena, maxSize);
            id.connect(params(client));
            CmEvent request = expect(serverChannel, CmEventType.CONNECT_REQUEST);
            server = new Side(request.id(), arena, maxSize);
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

    private static ConnectionParameters params(Side side) {
        ByteBuffer b = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
        side.mr.toRemoteBuffer().writeTo(b);
        return ConnectionParameters.DEFAULTS.withPrivateData(b.array());
    }

    private static RemoteBuffer decode(byte[] privateData) {
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
