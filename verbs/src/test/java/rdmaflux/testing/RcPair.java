package rdmaflux.testing;

import java.util.Set;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CompletionChannel;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.SendOp;

/**
 * Two connected queue pairs of one type on one device, each with its own CQ (and channel) and a
 * registered buffer: the fixture every verbs integration test starts from. Close it to free all.
 */
public final class RcPair implements AutoCloseable {
    /** Size of each side's buffer. */
    public static final int BUFFER = 64 * 1024;

    public final RdmaContext context;
    public final ProtectionDomain pd;
    public final Side a;
    public final Side b;
    private final Arena arena = Arena.ofShared();

    /** One end of the pair. */
    public static final class Side {
        public final CompletionChannel channel;
        public final CompletionQueue cq;
        public final QueuePair qp;
        public final MemorySegment buffer;
        public final MemoryRegion mr;

        Side(CompletionChannel channel, CompletionQueue cq, QueuePair qp, MemorySegment buffer, MemoryRegion mr) {
            this.channel = channel;
            this.cq = cq;
            this.qp = qp;
            this.buffer = buffer;
            this.mr = mr;
        }
    }

    private RcPair(QpType type, AccessFlags access, QpConnectOptions options, Set<SendOp> sendOps) {
        context = Rdma.open(RdmaTestEnv.device());
        try {
            pd = context.allocateProtectionDomain();
            a = side(type, access, sendOps);
            b = side(type, access, sendOps);
            a.qp.connect(b.qp.localEndpoint(options, 0x111), 0x222, options);
            b.qp.connect(a.qp.localEndpoint(options, 0x222), 0x111, options);
        } catch (RuntimeException | Error e) {
            context.close();
            throw e;
        }
    }

    /** @return a connected RC pair whose buffers allow all remote access */
    public static RcPair open() {
        return new RcPair(QpType.RC, AccessFlags.REMOTE_ALL, QpConnectOptions.DEFAULTS, Set.of());
    }

    /**
     * @param sendOps what the QPs' extended send queues may post
     * @return a connected RC pair made with createExtendedQueuePair, buffers allowing all remote access
     */
    public static RcPair openExtended(Set<SendOp> sendOps) {
        return new RcPair(QpType.RC, AccessFlags.REMOTE_ALL, QpConnectOptions.DEFAULTS, sendOps);
    }

    /**
     * @param type RC or UC
     * @param access what each side's buffer grants the peer
     * @param options connect options
     * @return a connected pair
     */
    public static RcPair open(QpType type, AccessFlags access, QpConnectOptions options) {
        return new RcPair(type, access, options, Set.of());
    }

    private Side side(QpType type, AccessFlags access, Set<SendOp> sendOps) {
        CompletionChannel ch = context.createCompletionChannel();
        CompletionQueue cq = context.createCompletionQueue(128, ch, 0);
        QpInitAttributes attrs = QpInitAttributes.builder(type).completionQueue(cq).depth(64, 64)
                .sge(2, 2).maxInlineData(64).build();
        QueuePair qp = sendOps.isEmpty() ? pd.createQueuePair(attrs) : pd.createExtendedQueuePair(attrs, sendOps);
        MemorySegment buf = arena.allocate(BUFFER, 4096);
        return new Side(ch, cq, qp, buf, pd.register(buf, access));
    }

    @Override
    public void close() {
        try {
            context.close();
        } finally {
            arena.close();
        }
    }
}
