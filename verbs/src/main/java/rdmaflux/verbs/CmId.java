package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

import rdmaflux.verbs.ffi.RdmaH;
import rdmaflux.verbs.ffi.rdma_addr;
import rdmaflux.verbs.ffi.rdma_cm_id;
import rdmaflux.verbs.ffi.rdma_cm_join_mc_attr_ex;
import rdmaflux.verbs.ffi.rdma_route;

/**
 * A connection manager id ({@code struct rdma_cm_id}): librdmacm's socket. Its operations are
 * asynchronous: each returns at once and its outcome arrives as a {@link CmEvent} on the
 * {@link EventChannel} (e.g. {@link #resolveAddress} → ADDR_RESOLVED or ADDR_ERROR).
 *
 * <p>Closing the id destroys its QP and what was created through {@link #context()}, then the id.
 */
public final class CmId extends NativeResource {
    private static final int RDMA_OPTION_ID = 0;
    private static final int RDMA_OPTION_ID_TOS = 0;
    private static final int RDMA_OPTION_ID_REUSEADDR = 1;
    private static final int RDMA_OPTION_ID_ACK_TIMEOUT = 3;

    /**
     * The most private data {@link #reject} carries: the IB CM REJ message's private data field
     * ({@code IB_CM_REJ_PRIVATE_DATA_SIZE}, 148 bytes). rdma_cm passes a reject's data to the IB CM
     * unchanged on InfiniBand and RoCE (no header of its own, unlike connect and accept), and the kernel
     * refuses a longer one with EINVAL, although {@code rdma_reject} takes the length as a byte.
     */
    public static final int MAX_REJECT_PRIVATE_DATA = 148;

    private final EventChannel channel;
    private final PortSpace portSpace;
    private volatile RdmaContext context;
    private volatile QueuePair qp;
    private volatile Object attachment;

    CmId(EventChannel channel, MemorySegment id, PortSpace portSpace) {
        super(Rank.CM_ID, id.reinterpret(rdma_cm_id.sizeof()), channel);
        this.channel = channel;
        this.portSpace = portSpace;
    }

    /** {@return the channel this id's events arrive on} */
    public EventChannel channel() {
        return channel;
    }

    /** {@return the port space the id was created in} */
    public PortSpace portSpace() {
        return portSpace;
    }

    /**
     * Binds to a local address (and port; 0 picks one). Needed before {@link #listen}; optional before
     * {@link #resolveAddress}. Binding to an address of an RDMA device also binds the id to that device.
     *
     * @param local the address
     * @throws RdmaNoDeviceException (ENODEV/EADDRNOTAVAIL) when no RDMA device has that address
     */
    public void bind(InetSocketAddress local) {
        MemorySegment id = acquire();
        try {
            CmCalls.Scratch s = CmCalls.scratch();
            SockAddr.write(local, s.source);
            CmCalls.bindAddr(s, id);
        } finally {
            release();
        }
    }

    /**
     * Starts resolving the destination to a local device and port: ADDR_RESOLVED or ADDR_ERROR follows.
     *
     * @param source local address to use, or {@code null} to let routing choose
     * @param destination the peer
     * @param timeout how long librdmacm may take
     */
    public void resolveAddress(InetSocketAddress source, InetSocketAddress destination, Duration timeout) {
        int ms = millis(timeout);
        MemorySegment id = acquire();
        try {
            CmCalls.Scratch s = CmCalls.scratch();
            SockAddr.write(destination, s.destination);
            CmCalls.resolveAddr(s, id, source == null ? MemorySegment.NULL : SockAddr.write(source, s.source), ms);
        } finally {
            release();
        }
    }

    /**
     * Starts resolving the route: ROUTE_RESOLVED or ROUTE_ERROR follows.
     *
     * @param timeout how long librdmacm may take
     */
    public void resolveRoute(Duration timeout) {
        int ms = millis(timeout);
        MemorySegment id = acquire();
        try {
            CmCalls.resolveRoute(id, ms);
        } finally {
            release();
        }
    }

    /**
     * Listens for connect requests (CONNECT_REQUEST events carry new ids).
     *
     * @param backlog pending requests the kernel queues
     */
    public void listen(int backlog) {
        MemorySegment id = acquire();
        try {
            CmCalls.listen(id, backlog);
        } finally {
            release();
        }
    }

    /**
     * The device context this id is bound to (after bind, address resolution, or a connect request).
     * It belongs to librdmacm; what is created through it is closed with this id.
     *
     * @return the context
     * @throws IllegalStateException when the id is not bound to a device yet
     */
    public RdmaContext context() {
        RdmaContext c = context;
        if (c != null) {
            return c;
        }
        synchronized (this) {
            if (context == null) {
                context = new RdmaContext(verbs(), false, this);
            }
            return context;
        }
    }

    /**
     * The device context this id is bound to, as one object per device for the whole process. What is
     * created through it belongs to no id: its creator closes it, and it may outlive this id. That lets
     * many connections share one object per device, e.g. one completion channel per event loop. CQs and
     * QPs of this id may use such objects ({@link RdmaContext#createCompletionQueue} accepts a channel of
     * the same device). librdmacm keeps the native context open for the life of the process.
     *
     * @return the shared context of this id's device
     * @throws IllegalStateException when the id is not bound to a device yet
     */
    public RdmaContext sharedContext() {
        return RdmaContext.shared(verbs());
    }

    /** {@return {@code cm_id->verbs}, the native device context} */
    private MemorySegment verbs() {
        MemorySegment id = acquire();
        try {
            MemorySegment verbs = rdma_cm_id.verbs(id);
            if (verbs.equals(MemorySegment.NULL)) {
                throw new IllegalStateException(this + " is not bound to a device yet: bind it to an RDMA "
                        + "address or resolve an address first");
            }
            return verbs;
        } finally {
            release();
        }
    }

    /**
     * Creates this id's QP with {@code rdma_create_qp}: librdmacm moves it through the states the CM
     * needs (INIT for connected ids, RTS for UD ids) and the connect/accept handshake does the rest.
     *
     * @param pd protection domain from {@link #context()}
     * @param attributes type and queues; the type must match the port space (RC for TCP, UD for UDP)
     * @return the QP, closed with this id
     */
    public QueuePair createQueuePair(ProtectionDomain pd, QpInitAttributes attributes) {
        QpType expected = portSpace == PortSpace.UDP || portSpace == PortSpace.IPOIB ? QpType.UD : QpType.RC;
        if (attributes.type() != expected && !(portSpace == PortSpace.IB)) {
            throw new IllegalArgumentException(portSpace + " ids need " + expected + " QPs, not " + attributes.type());
        }
        if (qp != null && !qp.isClosed()) {
            throw new IllegalStateException(this + " already has " + qp);
        }
        MemorySegment id = acquire();
        try {
            CmCalls.Scratch s = CmCalls.scratch();
            // rdma_create_qp writes the granted capacities back into init; QueuePair reads them below.
            MemorySegment init = s.qpInit();
            MemorySegment pdHandle = pd.acquire();
            try (var leases = attributes.writeTo(init)) {
                CmCalls.createQp(s, id, pdHandle);
            } catch (RdmaException e) {
                throw DeviceLimits.explain(e, pd.context().deviceName(), pd.context()::queryDevice,
                        DeviceLimits.Kind.QUEUE_PAIR, attributes.size());
            } finally {
                pd.release();
            }
            QueuePair q = new QueuePair(pd, rdma_cm_id.qp(id), attributes, init, this);
            qp = q;
            return q;
        } finally {
            release();
        }
    }

    /** {@return the QP made by {@link #createQueuePair}, or {@code null}} */
    public QueuePair queuePair() {
        return qp;
    }

    /**
     * Starts connecting (after ROUTE_RESOLVED): ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_ERROR follows.
     *
     * @param parameters private data, depths and retry counts
     */
    public void connect(ConnectionParameters parameters) {
        MemorySegment id = acquire();
        try {
            CmCalls.Scratch s = CmCalls.scratch();
            parameters.writeTo(s.param, s.data);
            CmCalls.connect(s, id);
        } finally {
            release();
        }
    }

    /**
     * Accepts a connect request (on the id the CONNECT_REQUEST event carried): ESTABLISHED follows.
     *
     * @param parameters private data for the peer, depths
     */
    public void accept(ConnectionParameters parameters) {
        MemorySegment id = acquire();
        try {
            CmCalls.Scratch s = CmCalls.scratch();
            parameters.writeTo(s.param, s.data);
            CmCalls.accept(s, id);
        } finally {
            release();
        }
    }

    /**
     * Rejects a connect request; the peer sees REJECTED with this private data.
     *
     * @param privateData up to {@value #MAX_REJECT_PRIVATE_DATA} bytes for the peer, may be empty
     * @throws IllegalArgumentException when {@code privateData} is longer, before any native call
     */
    public void reject(byte[] privateData) {
        if (privateData.length > MAX_REJECT_PRIVATE_DATA) {
            throw new IllegalArgumentException("reject private data is limited to " + MAX_REJECT_PRIVATE_DATA
                    + " bytes (IB CM REJ), got " + privateData.length);
        }
        MemorySegment id = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = MemorySegment.NULL;
            if (privateData.length > 0) {
                data = arena.allocate(privateData.length);
                MemorySegment.copy(privateData, 0, data, ValueLayout.JAVA_BYTE, 0, privateData.length);
            }
            Calls.RDMA_REJECT.callInt(id, data, (byte) privateData.length);
        } finally {
            release();
        }
    }

    /** Disconnects: both sides get DISCONNECTED; the QP moves to ERROR and posted work flushes. */
    public void disconnect() {
        MemorySegment id = acquire();
        try {
            CmCalls.disconnect(id);
        } finally {
            release();
        }
    }

    /**
     * Joins a multicast group (after address resolution or bind): MULTICAST_JOIN or MULTICAST_ERROR follows.
     *
     * @param group the group address
     */
    public void joinMulticast(InetAddress group) {
        MemorySegment id = acquire();
        try (Arena arena = Arena.ofConfined()) {
            Calls.RDMA_JOIN_MULTICAST.callInt(id, SockAddr.of(new InetSocketAddress(group, 0), arena),
                    MemorySegment.NULL);
        } finally {
            release();
        }
    }

    /**
     * Joins a multicast group with {@code rdma_join_multicast_ex}, optionally as a send-only full member
     * ({@code RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER}): the QP may send to the group but librdmacm does not
     * attach it, so it receives nothing from the group (not even its own datagrams). MULTICAST_JOIN or
     * MULTICAST_ERROR follows; kernels or devices without send-only support fail here or with
     * MULTICAST_ERROR.
     *
     * @param group the group address
     * @param sendOnly whether to join as a send-only full member rather than a full member
     */
    public void joinMulticast(InetAddress group, boolean sendOnly) {
        MemorySegment id = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = rdma_cm_join_mc_attr_ex.allocate(arena);
            rdma_cm_join_mc_attr_ex.comp_mask(attr, RdmaH.RDMA_CM_JOIN_MC_ATTR_ADDRESS()
                    | RdmaH.RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS());
            rdma_cm_join_mc_attr_ex.join_flags(attr, sendOnly ? RdmaH.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER()
                    : RdmaH.RDMA_MC_JOIN_FLAG_FULLMEMBER());
            rdma_cm_join_mc_attr_ex.addr(attr, SockAddr.of(new InetSocketAddress(group, 0), arena));
            Calls.RDMA_JOIN_MULTICAST_EX.callInt(id, attr, MemorySegment.NULL);
        } finally {
            release();
        }
    }

    /**
     * Leaves a multicast group joined with {@link #joinMulticast}.
     *
     * @param group the group address
     */
    public void leaveMulticast(InetAddress group) {
        MemorySegment id = acquire();
        try (Arena arena = Arena.ofConfined()) {
            Calls.RDMA_LEAVE_MULTICAST.callInt(id, SockAddr.of(new InetSocketAddress(group, 0), arena));
        } finally {
            release();
        }
    }

    /**
     * Lets a listener rebind an address still in TIME_WAIT.
     *
     * @param reuse whether to allow it
     */
    public void setReuseAddress(boolean reuse) {
        setIntOption(RDMA_OPTION_ID_REUSEADDR, reuse ? 1 : 0, 4);
    }

    /**
     * Sets the type of service of outgoing traffic.
     *
     * @param tos the TOS byte
     */
    public void setTypeOfService(int tos) {
        setIntOption(RDMA_OPTION_ID_TOS, tos, 1);
    }

    /**
     * Sets the local ACK timeout of the id's RC QP ({@code RDMA_OPTION_ID_ACK_TIMEOUT}): a sent packet
     * is retransmitted after 4.096 µs × 2<sup>exponent</sup> without an ACK. Call it before
     * {@link #connect} (active side) or {@link #accept} (passive side).
     *
     * @param exponent 0..31 (0 = wait forever)
     */
    public void setAckTimeout(int exponent) {
        if (exponent < 0 || exponent > 31) {
            throw new IllegalArgumentException("the ACK timeout is a 5-bit exponent, 0..31: " + exponent);
        }
        setIntOption(RDMA_OPTION_ID_ACK_TIMEOUT, exponent, 1);
    }

    private void setIntOption(int name, int value, int size) {
        MemorySegment id = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(4);
            if (size == 1) {
                v.set(ValueLayout.JAVA_BYTE, 0, (byte) value);
            } else {
                v.set(ValueLayout.JAVA_INT, 0, value);
            }
            Calls.RDMA_SET_OPTION.callInt(id, RDMA_OPTION_ID, name, v, (long) size);
        } finally {
            release();
        }
    }

    /**
     * Attaches an object to this id, the Java side of {@code cm_id->context}: an event loop keeps the
     * handler of the id's events here and finds it from {@link CmEvent#id()} (or
     * {@link CmEvent#listenId()}) without a map of its own.
     *
     * @param value the object, or {@code null} to detach
     */
    public void attach(Object value) {
        attachment = value;
    }

    /** {@return the object given to {@link #attach}, or {@code null}} */
    public Object attachment() {
        return attachment;
    }

    /** {@return the local address, or {@code null} before bind/resolve} */
    public InetSocketAddress localAddress() {
        MemorySegment id = acquire();
        try {
            return SockAddr.read(rdma_addr.src_addr(rdma_route.addr(rdma_cm_id.route(id))));
        } finally {
            release();
        }
    }

    /** {@return the peer's address, or {@code null} before resolve/connect request} */
    public InetSocketAddress peerAddress() {
        MemorySegment id = acquire();
        try {
            return SockAddr.read(rdma_addr.dst_addr(rdma_route.addr(rdma_cm_id.route(id))));
        } finally {
            release();
        }
    }

    /** {@return the device port the id is bound to, 0 before that} */
    public int portNumber() {
        MemorySegment id = acquire();
        try {
            return Byte.toUnsignedInt(rdma_cm_id.port_num(id));
        } finally {
            release();
        }
    }

    private static int millis(Duration d) {
        long ms = d.toMillis();
        if (ms <= 0 || ms > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("timeout must be between 1 ms and ~24 days, got " + d);
        }
        return (int) ms;
    }

    @Override
    void destroy() {
        channel.forget(this);
        CmCalls.destroyId(handle);
    }

    @Override
    public String toString() {
        return "CmId[" + portSpace + "@" + Long.toHexString(handle.address()) + "]";
    }
}
