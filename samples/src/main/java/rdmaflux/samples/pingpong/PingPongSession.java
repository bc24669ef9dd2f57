package rdmaflux.samples.pingpong;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.AddressHandleAttributes;
import rdmaflux.verbs.CompletionChannel;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.Errno;
import rdmaflux.verbs.Gid;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.Mtu;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QpEndpoint;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaException;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.SharedReceiveQueue;

/**
 * The verbs objects of one pingpong side, set up as {@code pp_init_ctx} and {@code pp_connect_ctx} do
 * for the example of {@link PingPongKind}: one buffer of {@code size} bytes (plus the GRH for UD) that
 * every send comes from and every receive lands in, one CQ (with a completion channel for {@code -e}),
 * {@code numQp} QPs in INIT with {@code rxDepth} receives posted, on the QPs or on their shared
 * receive queue. All of it is used by the thread that runs the command; the context owns every object
 * and {@link #close()} frees them, children first.
 */
final class PingPongSession implements AutoCloseable {
    static final int RECV_WRID = 1;
    static final int SEND_WRID = 2;
    /** The qkey ud_pingpong uses on both sides. */
    static final int QKEY = 0x11111111;

    final PingPongKind kind;
    final int size;
    final int rxDepth;
    final RdmaContext ctx;
    final CompletionChannel channel;
    final CompletionQueue cq;
    final List<QueuePair> qps = new ArrayList<>();
    final int[] psns;
    final MemorySegment buffer;
    private final Arena arena = Arena.ofShared();
    private final ProtectionDomain pd;
    private final MemoryRegion mr;
    private final SharedReceiveQueue srq;
    private final QpConnectOptions options;
    private final int gidIndex;
    private final int sendFlags;
    private final SendRequests send = new SendRequests(1, 1);
    private final ReceiveRequests recv = new ReceiveRequests(1, 1);
    private AddressHandle ah;
    private int remoteUdQpn;

    PingPongSession(RdmaContext ctx, PingPongKind kind, PingPongOptions o, int size, int numQp, Mtu mtu) {
        this.ctx = ctx;
        this.kind = kind;
        this.size = size;
        this.rxDepth = o.rxDepth;
        this.gidIndex = o.gidIndex;
        this.options = QpConnectOptions.builder().port(o.ibPort).gidIndex(Math.max(0, o.gidIndex)).mtu(mtu)
                .access(AccessFlags.of()).serviceLevel(o.sl).minRnrTimer(12).timeout(14).retryCount(7).rnrRetry(7)
                .readAtomicDepth(1, 1).hopLimit(kind == PingPongKind.UD ? 64 : 1).qkey(QKEY).build();
        channel = o.events ? ctx.createCompletionChannel() : null;
        pd = ctx.allocateProtectionDomain();
        int length = size + kind.dataOffset();
        buffer = arena.allocate(length, 4096);
        buffer.fill((byte) 0x7b);
        mr = register(pd, buffer, o.odp);
        cq = ctx.createCompletionQueue(rxDepth + numQp, channel, 0);
        srq = kind == PingPongKind.SRQ ? pd.createSharedReceiveQueue(rxDepth, 1, 0) : null;
        for (int i = 0; i < numQp; i++) {
            QpInitAttributes.Builder attrs = QpInitAttributes.builder(kind.qpType).completionQueue(cq)
                    .depth(1, rxDepth).sge(1, 1);
            if (srq != null) {
                attrs.sharedReceiveQueue(srq);
            }
            QueuePair qp = pd.createQueuePair(attrs.build());
            qp.modifyToInit(options);
            qps.add(qp);
        }
        psns = new int[numQp];
        for (int i = 0; i < numQp; i++) {
            psns[i] = ThreadLocalRandom.current().nextInt(1 << 24);
        }
        int flags = SendFlag.mask(SendFlag.SIGNALED);
        if (qps.getFirst().maxInlineData() >= size) {
            flags |= SendFlag.mask(SendFlag.INLINE);
        }
        sendFlags = flags;
        recv.set(0, RECV_WRID).sge(0, 0, mr, 0, length);
    }

    /** Registers the buffer; with {@code -o} on-demand, which a device without ODP refuses (EOPNOTSUPP). */
    private static MemoryRegion register(ProtectionDomain pd, MemorySegment buffer, boolean odp) {
        if (!odp) {
            return pd.register(buffer, AccessFlags.LOCAL_WRITE);
        }
        try {
            return pd.register(buffer, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.ON_DEMAND));
        } catch (RdmaException e) {
            if (e.errno() == Errno.EOPNOTSUPP || e.errno() == Errno.EINVAL) {
                throw new PingPongException("The device isn't ODP capable (" + e.getMessage() + ")");
            }
            throw e;
        }
    }

    /** {@return the port's attributes} */
    PortAttributes port() {
        return ctx.queryPort(options.port());
    }

    /** {@return this side's records: the port's LID, each QP's number and PSN, the GID of -g (zero without)} */
    List<WireDestination> localDestinations() {
        int lid = port().lid();
        Gid gid = gidIndex >= 0 ? ctx.queryGid(options.port(), gidIndex) : Gid.ZERO;
        List<WireDestination> out = new ArrayList<>(qps.size());
        for (int i = 0; i < qps.size(); i++) {
            out.add(new WireDestination(lid, qps.get(i).number(), psns[i], gid));
        }
        return out;
    }

    /**
     * RTR and RTS towards the peer's QPs, one to one ({@code pp_connect_ctx}); for UD the address handle
     * towards the peer's one QP instead.
     */
    void connect(List<WireDestination> remote) {
        for (int i = 0; i < qps.size(); i++) {
            WireDestination r = remote.get(i);
            QueuePair qp = qps.get(i);
            if (kind == PingPongKind.UD) {
                // INIT again (allowed, nothing changes), then RTR and RTS: ud_pingpong's two modify calls.
                qp.activateDatagram(options, psns[i]);
                ah = pd.createAddressHandle(new AddressHandleAttributes(options.port(), r.lid(), options.serviceLevel(),
                        !r.gid().isZero(), r.gid().isZero() ? null : r.gid(), options.gidIndex(), options.hopLimit(),
                        0, 0));
                remoteUdQpn = r.qpn();
            } else {
                qp.modifyToRtr(new QpEndpoint(r.qpn(), r.psn(), r.lid(), r.gid(), options.mtu()), options);
                qp.modifyToRts(psns[i], options);
            }
        }
    }

    /** Posts {@code n} receives of the whole buffer; {@return n} (a failure throws, naming the errno). */
    int postReceives(int n) {
        for (int i = 0; i < n; i++) {
            if (srq != null) {
                srq.postReceive(recv, 1);
            } else {
                qps.getFirst().postReceive(recv, 1);
            }
        }
        return n;
    }

    /** Posts one signaled SEND of {@code size} bytes on QP {@code index}. */
    void postSend(int index) {
        send.set(0, SEND_WRID, SendOpcode.SEND, sendFlags).sge(0, 0, mr, kind.dataOffset(), size);
        if (kind == PingPongKind.UD) {
            send.ud(0, ah, remoteUdQpn, QKEY);
        }
        qps.get(index).postSend(send, 1);
    }

    /** {@return the index of the QP with this number, or -1} */
    int indexOf(int qpNumber) {
        for (int i = 0; i < qps.size(); i++) {
            if (qps.get(i).number() == qpNumber) {
                return i;
            }
        }
        return -1;
    }

    /** The C client's {@code -c} marking: the first byte of each page of the data is 0. */
    void markPages(int pageSize) {
        for (int i = 0; i < size; i += pageSize) {
            buffer.set(ValueLayout.JAVA_BYTE, kind.dataOffset() + i, (byte) 0);
        }
    }

    /** {@return the pages whose first byte is not the 0 the client's {@code -c} put there} */
    List<Integer> invalidPages(int pageSize) {
        List<Integer> bad = new ArrayList<>();
        for (int i = 0; i < size; i += pageSize) {
            if (buffer.get(ValueLayout.JAVA_BYTE, kind.dataOffset() + i) != 0) {
                bad.add(i / pageSize);
            }
        }
        return bad;
    }

    @Override
    public void close() {
        // The context frees QPs, SRQ, CQ, MR, AH and PD, children first; the buffer outlives the MR.
        ctx.close();
        arena.close();
    }
}
