package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_qp;
import rdmaflux.verbs.ffi.ibv_qp_attr;
import rdmaflux.verbs.ffi.ibv_qp_cap;
import rdmaflux.verbs.ffi.ibv_qp_init_attr;

/**
 * A queue pair ({@code struct ibv_qp}): the endpoint work requests are posted to.
 *
 * <p>State changes go RESET → INIT → RTR → RTS; {@link #connect} does all three from a peer's
 * {@link QpEndpoint} exchanged out of band, {@link #activateDatagram} does it for UD. Posting
 * ({@link #postSend}, {@link #postReceive}) is the inline {@code ibv_post_send}/{@code ibv_post_recv}
 * of verbs.h, through the provider's function pointers, and allocates nothing.
 *
 * <p>Lifetimes: each work queue records its posted requests with the objects they reference (regions,
 * address handle, memory window), each under a work lease, until a poll of the QP's CQ returns the
 * completion that ends them (an unsignaled request ends with the next completion of its queue). Closing
 * one of those objects meanwhile makes it refuse new uses at once and defers its native destroy until
 * then; destroying or resetting the QP ends all its requests and gives every lease back. Posts to one
 * work queue are serialised (a lock that costs one compare-and-set uncontended), so that the record's
 * order is the provider's.
 */
public final class QueuePair extends NativeResource {
    // enum ibv_qp_attr_mask
    private static final int STATE = 1;
    private static final int ACCESS_FLAGS = 1 << 3;
    private static final int PKEY_INDEX = 1 << 4;
    private static final int PORT = 1 << 5;
    private static final int QKEY = 1 << 6;
    private static final int AV = 1 << 7;
    private static final int PATH_MTU = 1 << 8;
    private static final int TIMEOUT = 1 << 9;
    private static final int RETRY_CNT = 1 << 10;
    private static final int RNR_RETRY = 1 << 11;
    private static final int RQ_PSN = 1 << 12;
    private static final int MAX_QP_RD_ATOMIC = 1 << 13;
    private static final int MIN_RNR_TIMER = 1 << 15;
    private static final int SQ_PSN = 1 << 16;
    private static final int MAX_DEST_RD_ATOMIC = 1 << 17;
    private static final int CAP = 1 << 19;
    private static final int DEST_QPN = 1 << 20;

    private final ProtectionDomain pd;
    private final CmId cmId;
    private final QpType type;
    private final int number;
    private final CompletionQueue sendCq;
    private final CompletionQueue receiveCq;
    private final SharedReceiveQueue srq;
    private final int maxSendWr;
    private final int maxReceiveWr;
    private final int maxSendSge;
    private final int maxReceiveSge;
    private final int maxInlineData;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    /** Set once by {@link ProtectionDomain#createExtendedQueuePair}, before the QP is handed out. */
    private ExtendedSendQueue extended;
    /** The send queue's outstanding requests; retired by {@link #sendCq}'s polls. */
    final WorkRing sendRing;
    /** The receive queue's outstanding requests, or null with an SRQ (which keeps its own). */
    private final WorkRing receiveRing;
    /** Serialises posts to the send queue (classic, extended, type-1 binds). */
    final QueueLock sendLock = new QueueLock();
    private final QueueLock receiveLock = new QueueLock();
    private final WorkQueues queues;

    /**
     * Wraps a created QP.
     *
     * @param init the init attributes after creation: the device wrote the granted capacities back
     * @param cmId the connection manager id that created it with rdma_create_qp, or null
     */
    QueuePair(ProtectionDomain pd, MemorySegment qp, QpInitAttributes attributes, MemorySegment init, CmId cmId) {
        super(Rank.QP, qp.reinterpret(ibv_qp.sizeof()), owners(pd, cmId, attributes));
        this.pd = pd;
        this.cmId = cmId;
        this.type = attributes.type();
        this.number = ibv_qp.qp_num(handle);
        this.sendCq = attributes.sendCq();
        this.receiveCq = attributes.receiveCq();
        this.srq = attributes.srq();
        int[] cap = QpInitAttributes.grantedCapacities(init);
        this.maxSendWr = cap[0];
        this.maxReceiveWr = cap[1];
        this.maxSendSge = cap[2];
        this.maxReceiveSge = cap[3];
        this.maxInlineData = cap[4];
        // The QP's context is its PD's (rdma-core sets qp->context = pd->context; librdmacm refuses a PD of
        // another context), whose provider entry points were read once.
        this.postSendFn = pd.context().postSendFn;
        this.postRecvFn = pd.context().postRecvFn;
        // A send references its entries' regions plus an address handle, or a bind its window and region.
        this.sendRing = new WorkRing(maxSendWr, maxSendSge + 2, sendCq.pollLock);
        this.receiveRing = srq == null ? new WorkRing(maxReceiveWr, maxReceiveSge, receiveCq.pollLock) : null;
        this.queues = new WorkQueues(sendRing, receiveRing, sendCq, receiveCq, srq);
        sendCq.queuePairs.add(number(), this);
        if (receiveCq != sendCq) {
            receiveCq.queuePairs.add(number(), this);
        }
    }

    /**
     * Everything the QP uses: closing any of them closes the QP first. Without the CQs and the SRQ here,
     * closing a CQ a QP still uses fails in the kernel (EBUSY) and leaves a "closed" CQ that still
     * receives completions.
     */
    private static NativeResource[] owners(ProtectionDomain pd, CmId cmId, QpInitAttributes attributes) {
        java.util.List<NativeResource> o = new java.util.ArrayList<>(6);
        for (NativeResource r : new NativeResource[] {pd, pd.context(), cmId, attributes.sendCq(),
            attributes.receiveCq(), attributes.srq()}) {
            if (r != null && !o.contains(r)) {
                o.add(r);
            }
        }
        return o.toArray(new NativeResource[0]);
    }

    /** {@return the QP number peers address} */
    public int number() {
        return number;
    }

    /** {@return the transport} */
    public QpType type() {
        return type;
    }

    /** {@return the protection domain} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** {@return the CQ send completions go to} */
    public CompletionQueue sendCompletionQueue() {
        return sendCq;
    }

    /** {@return the CQ receive completions go to} */
    public CompletionQueue receiveCompletionQueue() {
        return receiveCq;
    }

    /** {@return the shared receive queue, or {@code null}} */
    public SharedReceiveQueue sharedReceiveQueue() {
        return srq;
    }

    /** {@return the send depth the device granted} */
    public int maxSendWr() {
        return maxSendWr;
    }

    /** {@return the receive depth the device granted} */
    public int maxReceiveWr() {
        return maxReceiveWr;
    }

    /** {@return scatter/gather entries per send} */
    public int maxSendSge() {
        return maxSendSge;
    }

    /** {@return scatter/gather entries per receive} */
    public int maxReceiveSge() {
        return maxReceiveSge;
    }

    /** {@return the largest inline payload the device granted} */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * Describes this side for the peer.
     *
     * @param options the port and GID index to use
     * @param psn this side's initial send PSN (24 bits)
     * @return the endpoint to send to the peer
     */
    public QpEndpoint localEndpoint(QpConnectOptions options, int psn) {
        RdmaContext ctx = pd.context();
        PortAttributes port = ctx.queryPort(options.port());
        Mtu mtu = port.activeMtu().value() < options.mtu().value() ? port.activeMtu() : options.mtu();
        return new QpEndpoint(number, psn, port.lid(), ctx.queryGid(options.port(), options.gidIndex()), mtu);
    }

    /**
     * RESET → INIT → RTR → RTS for an RC or UC QP.
     *
     * @param remote the peer's endpoint
     * @param localPsn this side's initial send PSN, as sent to the peer
     * @param options timers, port, access
     */
    public void connect(QpEndpoint remote, int localPsn, QpConnectOptions options) {
        if (type == QpType.UD) {
            throw new IllegalStateException("UD QPs are not connected: use activateDatagram");
        }
        modifyToInit(options);
        modifyToRtr(remote, options);
        modifyToRts(localPsn, options);
    }

    /**
     * RESET → INIT → RTR → RTS for a UD QP.
     *
     * @param options port and qkey
     * @param psn initial send PSN
     */
    public void activateDatagram(QpConnectOptions options, int psn) {
        if (type != QpType.UD) {
            throw new IllegalStateException("activateDatagram is for UD QPs; this is " + type);
        }
        modifyToInit(options);
        modify(a -> ibv_qp_attr.qp_state(a, QpState.RTR.value()), STATE);
        modifyToRts(psn, options);
    }

    /**
     * RESET → INIT.
     *
     * @param options port, pkey index, and access (RC/UC) or qkey (UD)
     */
    public void modifyToInit(QpConnectOptions options) {
        modify(a -> {
            ibv_qp_attr.qp_state(a, QpState.INIT.value());
            ibv_qp_attr.pkey_index(a, (short) options.pkeyIndex());
            ibv_qp_attr.port_num(a, (byte) options.port());
            if (type == QpType.UD) {
                ibv_qp_attr.qkey(a, options.qkey());
            } else {
                ibv_qp_attr.qp_access_flags(a, options.access().mask());
            }
        }, STATE | PKEY_INDEX | PORT | (type == QpType.UD ? QKEY : ACCESS_FLAGS));
    }

    /**
     * INIT → RTR: points the QP at the peer.
     *
     * @param remote the peer's endpoint
     * @param options path settings
     */
    public void modifyToRtr(QpEndpoint remote, QpConnectOptions options) {
        Mtu mtu = remote.mtu().value() < options.mtu().value() ? remote.mtu() : options.mtu();
        AddressHandleAttributes av = new AddressHandleAttributes(options.port(), remote.lid(),
                options.serviceLevel(), !remote.gid().isZero(), remote.gid(), options.gidIndex(), options.hopLimit(),
                options.trafficClass(), 0);
        int mask = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN;
        if (type == QpType.RC) {
            mask |= MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
        }
        modify(a -> {
            ibv_qp_attr.qp_state(a, QpState.RTR.value());
            ibv_qp_attr.path_mtu(a, mtu.value());
            ibv_qp_attr.dest_qp_num(a, remote.qpNumber());
            ibv_qp_attr.rq_psn(a, remote.psn());
            ibv_qp_attr.max_dest_rd_atomic(a, (byte) options.maxDestRdAtomic());
            ibv_qp_attr.min_rnr_timer(a, (byte) options.minRnrTimer());
            av.writeTo(ibv_qp_attr.ah_attr(a));
        }, mask);
    }

    /**
     * RTR → RTS: enables sending.
     *
     * @param psn this side's initial send PSN
     * @param options retry and timeout settings
     */
    public void modifyToRts(int psn, QpConnectOptions options) {
        int mask = STATE | SQ_PSN;
        if (type == QpType.RC) {
            mask |= TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC;
        }
        modify(a -> {
            ibv_qp_attr.qp_state(a, QpState.RTS.value());
            ibv_qp_attr.sq_psn(a, psn & 0xFFFFFF);
            ibv_qp_attr.timeout(a, (byte) options.timeout());
            ibv_qp_attr.retry_cnt(a, (byte) options.retryCount());
            ibv_qp_attr.rnr_retry(a, (byte) options.rnrRetry());
            ibv_qp_attr.max_rd_atomic(a, (byte) options.maxRdAtomic());
        }, mask);
    }

    /**
     * Moves the QP to ERROR: outstanding and later work requests complete with WR_FLUSH_ERR. The usual
     * first step of an orderly teardown, so every posted buffer is accounted for.
     */
    public void modifyToError() {
        modify(a -> ibv_qp_attr.qp_state(a, QpState.ERR.value()), STATE);
    }

    /**
     * Moves the QP back to RESET, discarding all work requests without completions; what they held is
     * given back (a closed region is deregistered now).
     */
    public void modifyToReset() {
        modify(a -> ibv_qp_attr.qp_state(a, QpState.RESET.value()), STATE);
        retireAll();
    }

    /**
     * Applies raw attributes produced by a callback (for the connection manager's rdma_init_qp_attr).
     *
     * @param attr a filled {@code ibv_qp_attr}
     * @param mask the attribute mask
     */
    void modifyRaw(MemorySegment attr, int mask) {
        MemorySegment qp = acquire();
        try {
            Calls.IBV_MODIFY_QP.callStatus(qp, attr, mask);
        } finally {
            release();
        }
    }

    private void modify(java.util.function.Consumer<MemorySegment> fill, int mask) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            fill.accept(a);
            modifyRaw(a, mask);
        }
    }

    /**
     * Queries the QP's current attributes.
     *
     * @return a snapshot
     */
    public QpAttributes query() {
        MemorySegment qp = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            MemorySegment init = ibv_qp_init_attr.allocate(arena);
            int mask = STATE | PATH_MTU | DEST_QPN | QKEY | SQ_PSN | RQ_PSN | PORT | TIMEOUT | RETRY_CNT | RNR_RETRY
                    | MIN_RNR_TIMER | CAP;
            Calls.IBV_QUERY_QP.callStatus(qp, a, mask, init);
            int mtu = ibv_qp_attr.path_mtu(a);
            MemorySegment cap = ibv_qp_attr.cap(a);
            return new QpAttributes(QpState.of(ibv_qp_attr.qp_state(a)), mtu == 0 ? null : Mtu.of(mtu),
                    ibv_qp_attr.dest_qp_num(a), ibv_qp_attr.qkey(a), ibv_qp_attr.sq_psn(a), ibv_qp_attr.rq_psn(a),
                    Byte.toUnsignedInt(ibv_qp_attr.port_num(a)), Byte.toUnsignedInt(ibv_qp_attr.timeout(a)),
                    Byte.toUnsignedInt(ibv_qp_attr.retry_cnt(a)), Byte.toUnsignedInt(ibv_qp_attr.rnr_retry(a)),
                    Byte.toUnsignedInt(ibv_qp_attr.min_rnr_timer(a)), ibv_qp_cap.max_send_wr(cap),
                    ibv_qp_cap.max_recv_wr(cap), ibv_qp_cap.max_inline_data(cap));
        } finally {
            release();
        }
    }

    /**
     * Queries how many RDMA reads and atomics the QP keeps in flight ({@code max_rd_atomic}, as
     * initiator) and accepts in flight from the peer ({@code max_dest_rd_atomic}, as responder): what
     * the connection was established with.
     *
     * @return {@code {initiator depth, responder resources}}
     */
    public int[] readAtomicDepths() {
        MemorySegment qp = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            MemorySegment init = ibv_qp_init_attr.allocate(arena);
            Calls.IBV_QUERY_QP.callStatus(qp, a, MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC, init);
            return new int[] {Byte.toUnsignedInt(ibv_qp_attr.max_rd_atomic(a)),
                Byte.toUnsignedInt(ibv_qp_attr.max_dest_rd_atomic(a))};
        } finally {
            release();
        }
    }

    /** {@return the current state, as queried from the device} */
    public QpState state() {
        return query().state();
    }

    /**
     * The extended post API ({@code ibv_wr_start} ... {@code ibv_wr_complete}) of a QP created with
     * {@link ProtectionDomain#createExtendedQueuePair}. Both post paths may be used on such a QP, but
     * not interleaved within one {@code start}/{@code complete}.
     *
     * @return the QP's one extended send queue
     * @throws IllegalStateException for a QP made with {@link ProtectionDomain#createQueuePair}
     */
    public ExtendedSendQueue extendedSendQueue() {
        if (extended == null) {
            throw new IllegalStateException(this + " was not created with ProtectionDomain.createExtendedQueuePair:"
                    + " it has no ibv_qp_ex");
        }
        return extended;
    }

    void attachExtended(int sendOps) {
        extended = ExtendedSendQueue.of(this, handle, sendOps);
    }

    /**
     * Posts the first {@code count} requests of the batch as one chain ({@code ibv_post_send}).
     *
     * @param requests the batch
     * @param count how many, from index 0
     * @throws RdmaException naming the rejected request (e.g. ENOMEM when the send queue is full,
     *                       EINVAL for an inline payload beyond {@link #maxInlineData()})
     */
    public void postSend(SendRequests requests, int count) {
        requests.unposted();
        requests.checkBinds(count, this);
        // The lock stands for a lease on the QP: close() waits for the lock before it destroys anything.
        sendLock.lock(this);
        try {
            int rc = requests.postRecorded(this, sendRing, postSendFn, handle, count, maxSendSge);
            requests.commitBinds(requests.lastPosted(), this);
            if (rc != 0) {
                throw requests.postFailure("ibv_post_send", rc);
            }
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Posts the first {@code count} receive requests of the batch as one chain ({@code ibv_post_recv}).
     *
     * @param requests the batch
     * @param count how many, from index 0
     */
    public void postReceive(ReceiveRequests requests, int count) {
        if (srq != null) {
            throw new IllegalStateException(this + " receives through " + srq + "; post receives there");
        }
        receiveLock.lock(this);
        try {
            int rc = requests.postRecorded(this, receiveRing, postRecvFn, handle, count, maxReceiveSge);
            if (rc != 0) {
                throw requests.postFailure("ibv_post_recv", rc);
            }
        } finally {
            receiveLock.unlock();
        }
    }

    /** Retires the work requests a completion polled from {@code cq} ended; see {@link WorkQueues#retire}. */
    void retire(CompletionQueue cq, long wrId, int status, int opcode) {
        queues.retire(cq, wrId, status, opcode);
    }

    /** {@return the send requests posted and not yet retired} */
    int outstandingSends() {
        return sendRing.outstanding();
    }

    /** {@return the receive requests posted to this QP (not its SRQ) and not yet retired} */
    int outstandingReceives() {
        return receiveRing == null ? 0 : receiveRing.outstanding();
    }

    /** Ends every recorded request, giving its leases back: the QP was destroyed or reset. */
    void retireAll() {
        queues.retireAll();
    }

    /**
     * Before the children close: waits for posts in flight (they hold a post lock instead of a lease, one
     * atomic operation less per post; later ones see the QP closed under the lock), then lets go of the
     * windows and leaves the CQs' tables ({@link WorkQueues#beforeClose}).
     */
    @Override
    void beforeChildren() {
        sendLock.lock(this);
        sendLock.unlock();
        receiveLock.lock(this);
        receiveLock.unlock();
        queues.beforeClose(this);
    }

    @Override
    void destroy() {
        if (cmId != null) {
            Calls.Plain.rdmaDestroyQp(cmId.handle);
        } else {
            Calls.IBV_DESTROY_QP.callStatus(handle);
        }
        // Only once the QP is gone: a failed destroy keeps the leases, and what they hold stays registered.
        retireAll();
    }

    @Override
    public String toString() {
        return "QueuePair[" + type + ", qpn=" + number + "]";
    }
}
