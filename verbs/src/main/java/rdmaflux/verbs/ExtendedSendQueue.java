package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_qp;
import rdmaflux.verbs.ffi.ibv_mw_bind_info;
import rdmaflux.verbs.ffi.ibv_qp_ex;

/**
 * The extended post API of a QP made with {@link ProtectionDomain#createExtendedQueuePair}
 * ({@code struct ibv_qp_ex} and the {@code ibv_wr_*} functions): a batch is {@link #start()}, then per
 * work request {@link #wrId}/{@link #flags}, one operation ({@link #send()}, {@link #rdmaWrite}, ...)
 * and its data ({@link #sge} or {@link #inlineData}, {@link #udAddress} on UD), then {@link #complete()}
 * posts them all, or {@link #abort()} drops them.
 *
 * <pre>{@code
 * ExtendedSendQueue sq = qp.extendedSendQueue();
 * sq.start();
 * sq.wrId(1).flags(SIGNALED).rdmaWrite(remote.rkey(), remote.address()).sge(mr, 0, 64);
 * sq.wrId(2).flags(SIGNALED).sendWithImm(7).sge(mr, 64, 8);
 * sq.complete();
 * }</pre>
 *
 * <p>The {@code ibv_wr_*} functions are static inline in verbs.h, calling function pointers inside
 * {@code ibv_qp_ex}; this class reads those pointers once ({@code QpExFunctions}) and calls them through
 * {@link ProviderCalls}, so a batch allocates nothing. Each operation checks that it was among the
 * {@link SendOp}s the QP was created with ({@link IllegalStateException} if not).
 *
 * <p>Not thread-safe: one thread builds a batch from {@code start} to {@code complete}. Between them
 * the QP holds a lease, so closing it waits for the batch to end, and other threads' posts to the send
 * queue wait too (a post from the batch's own thread is an {@link IllegalStateException}).
 *
 * <p>Lifetimes as with {@link QueuePair#postSend}: each operation's region ({@link #sge}), address handle
 * ({@link #udAddress}), or window and region ({@link #bindWindow}) are held by a work lease from the call
 * until the request's completion is polled, the batch is aborted or refused, or the QP is destroyed.
 */
public final class ExtendedSendQueue {
    private final QueuePair qp;
    private final MemorySegment qpx;
    private final int ops;
    /** The provider's {@code ibv_wr_*} functions, read once. */
    private final QpExFunctions fn;
    /** The {@code ibv_mw_bind_info} handed to {@code wr_bind_mw}, which copies it: one per queue, reused. */
    private final MemorySegment bindInfo;
    /** The binds of the open batch, recorded in their windows when {@link #complete()} posts them. */
    private MemoryWindow[] pendingWindows = new MemoryWindow[0];
    private MemoryRegion[] pendingRegions = new MemoryRegion[0];
    private int[] pendingRkeys = new int[0];
    private int pending;
    private boolean started;
    /** The id the next operation takes, as last given to {@link #wrId} (the provider reads it from qpx). */
    private long nextWrId;
    /** Whether an operation was added since {@link #start()}, so {@link #sge} has a request to belong to. */
    private boolean hasOperation;
    /** The send queue's ring mark at {@link #start()}: an abort drops the batch's entries from there. */
    private long mark;

    ExtendedSendQueue(QueuePair qp, MemorySegment qpx, int ops) {
        this.qp = qp;
        this.qpx = qpx.reinterpret(ibv_qp_ex.sizeof());
        this.ops = ops;
        this.fn = QpExFunctions.of(this.qpx);
        bindInfo = Arena.ofAuto().allocate(ibv_mw_bind_info.layout());
    }

    /** Finds the ibv_qp_ex of a QP, or says why there is none. */
    static ExtendedSendQueue of(QueuePair qp, MemorySegment qpHandle, int ops) {
        MemorySegment qpx = Calls.Plain.qpToQpEx(qpHandle);
        if (ops == 0 || qpx.equals(MemorySegment.NULL)) {
            throw new IllegalStateException(qp + " was not created with ProtectionDomain.createExtendedQueuePair:"
                    + " it has no ibv_qp_ex");
        }
        return new ExtendedSendQueue(qp, qpx, ops);
    }

    /** {@return the QP this posts to} */
    public QueuePair queuePair() {
        return qp;
    }

    /**
     * Tells whether the QP was created with an operation.
     *
     * @param op the operation
     * @return whether the QP's send-ops flags include it
     */
    public boolean supports(SendOp op) {
        return (ops & op.value()) != 0;
    }

    /**
     * Begins a batch ({@code ibv_wr_start}).
     *
     * @return this
     * @throws IllegalStateException when a batch is already open, or the QP is closed
     */
    public ExtendedSendQueue start() {
        if (started) {
            throw new IllegalStateException("a batch is already open on " + qp + ": complete() or abort() it first");
        }
        qp.acquire();
        try {
            qp.sendLock.lock(qp);
        } catch (RuntimeException e) {
            qp.release();
            throw e;
        }
        started = true;
        hasOperation = false;
        mark = qp.sendRing.mark();
        ProviderCalls.wrStart(fn.start(), qpx);
        return this;
    }

    /**
     * Sets the id of the next work request ({@code qpx->wr_id}).
     *
     * @param wrId the id its completion carries
     * @return this
     */
    public ExtendedSendQueue wrId(long wrId) {
        ibv_qp_ex.wr_id(qpx, wrId);
        nextWrId = wrId;
        return this;
    }

    /**
     * Sets the flags of the next work request ({@code qpx->wr_flags}, {@link SendFlag#mask}).
     *
     * @param sendFlags e.g. {@code SendFlag.mask(SendFlag.SIGNALED)}
     * @return this
     */
    public ExtendedSendQueue flags(int sendFlags) {
        ibv_qp_ex.wr_flags(qpx, sendFlags);
        return this;
    }

    /** {@return this, after adding a SEND ({@code ibv_wr_send})} */
    public ExtendedSendQueue send() {
        check(SendOp.SEND);
        ProviderCalls.wrSend(fn.send(), qpx);
        return this;
    }

    /**
     * Adds a SEND with immediate data ({@code ibv_wr_send_imm}).
     *
     * @param imm the value; it travels in network order and {@link WorkCompletions#immediateData} gives it back
     * @return this
     */
    public ExtendedSendQueue sendWithImm(int imm) {
        check(SendOp.SEND_WITH_IMM);
        ProviderCalls.wrSendImm(fn.sendImm(), qpx, Integer.reverseBytes(imm));
        return this;
    }

    /**
     * Adds a SEND that invalidates a remote key at the receiver ({@code ibv_wr_send_inv}).
     *
     * @param invalidateRkey the receiver's key to invalidate
     * @return this
     */
    public ExtendedSendQueue sendWithInvalidate(int invalidateRkey) {
        check(SendOp.SEND_WITH_INV);
        ProviderCalls.wrSendInv(fn.sendInv(), qpx, invalidateRkey);
        return this;
    }

    /**
     * Adds an RDMA WRITE ({@code ibv_wr_rdma_write}).
     *
     * @param rkey the remote key
     * @param remoteAddress the remote address
     * @return this
     */
    public ExtendedSendQueue rdmaWrite(int rkey, long remoteAddress) {
        check(SendOp.RDMA_WRITE);
        ProviderCalls.wrRdmaWrite(fn.write(), qpx, rkey, remoteAddress);
        return this;
    }

    /**
     * Adds an RDMA WRITE with immediate data, which consumes a receive at the peer ({@code ibv_wr_rdma_write_imm}).
     *
     * @param rkey the remote key
     * @param remoteAddress the remote address
     * @param imm the immediate value, as for {@link #sendWithImm}
     * @return this
     */
    public ExtendedSendQueue rdmaWriteWithImm(int rkey, long remoteAddress, int imm) {
        check(SendOp.RDMA_WRITE_WITH_IMM);
        ProviderCalls.wrRdmaWriteImm(fn.writeImm(), qpx, rkey, remoteAddress, Integer.reverseBytes(imm));
        return this;
    }

    /**
     * Adds an RDMA READ into the request's {@link #sge} ({@code ibv_wr_rdma_read}).
     *
     * @param rkey the remote key
     * @param remoteAddress the remote address
     * @return this
     */
    public ExtendedSendQueue rdmaRead(int rkey, long remoteAddress) {
        check(SendOp.RDMA_READ);
        ProviderCalls.wrRdmaRead(fn.read(), qpx, rkey, remoteAddress);
        return this;
    }

    /**
     * Adds an 8-byte compare-and-swap; the old value lands in the request's 8-byte {@link #sge}
     * ({@code ibv_wr_atomic_cmp_swp}).
     *
     * @param rkey the remote key
     * @param remoteAddress the remote address, 8-byte aligned
     * @param compare the value expected there
     * @param swap the value written when it matches
     * @return this
     */
    public ExtendedSendQueue compareAndSwap(int rkey, long remoteAddress, long compare, long swap) {
        check(SendOp.ATOMIC_CMP_AND_SWP);
        ProviderCalls.wrAtomicCmpSwp(fn.cmpSwp(), qpx, rkey, remoteAddress, compare, swap);
        return this;
    }

    /**
     * Adds an 8-byte fetch-and-add; the old value lands in the request's 8-byte {@link #sge}
     * ({@code ibv_wr_atomic_fetch_add}).
     *
     * @param rkey the remote key
     * @param remoteAddress the remote address, 8-byte aligned
     * @param add the addend
     * @return this
     */
    public ExtendedSendQueue fetchAndAdd(int rkey, long remoteAddress, long add) {
        check(SendOp.ATOMIC_FETCH_AND_ADD);
        ProviderCalls.wrAtomicFetchAdd(fn.fetchAdd(), qpx, rkey, remoteAddress, add);
        return this;
    }

    /**
     * Adds an atomic 8-byte write ({@code ibv_wr_atomic_write}, {@code IBV_WR_ATOMIC_WRITE}).
     *
     * @param rkey the remote key
     * @param remoteAddress the remote address, 8-byte aligned
     * @param value 8 bytes of native memory holding the value, read when the request is built
     * @return this
     */
    public ExtendedSendQueue atomicWrite(int rkey, long remoteAddress, MemorySegment value) {
        requireStarted();
        if (value.byteSize() < 8 || !value.isNative()) {
            throw new IllegalArgumentException("an atomic write takes 8 bytes of native memory, got " + value);
        }
        check(SendOp.ATOMIC_WRITE);
        ProviderCalls.wrAtomicWrite(fn.atomicWrite(), qpx, rkey, remoteAddress, value);
        return this;
    }

    /**
     * Adds a local invalidation of one of this side's keys ({@code ibv_wr_local_inv}).
     *
     * @param invalidateRkey the key
     * @return this
     */
    public ExtendedSendQueue localInvalidate(int invalidateRkey) {
        check(SendOp.LOCAL_INV);
        ProviderCalls.wrLocalInv(fn.localInv(), qpx, invalidateRkey);
        return this;
    }

    /**
     * Adds a bind of a type-2 window to a range of a region ({@code ibv_wr_bind_mw}) with the window's next key
     * ({@code ibv_inc_rkey}). Once {@link #complete()} posted it, the window holds the region (see
     * {@link MemoryWindow}) and is closed with this QP.
     *
     * @param window a {@link MemoryWindowType#TYPE_2} window of the QP's PD, not bound twice in one batch
     * @param region the region, registered with {@link AccessFlag#MW_BIND} in the same PD
     * @param offset where in the region the window starts
     * @param length bytes
     * @param access {@link AccessFlag#REMOTE_READ}, {@link AccessFlag#REMOTE_WRITE}, {@link AccessFlag#REMOTE_ATOMIC}
     * @return what the peer gets once the bind completed: the range and the window's new key
     * @throws IllegalStateException for a type-1 window, one already bound in this batch, or anything closed
     * @throws IllegalArgumentException when the region, QP or access do not fit the window
     */
    public RemoteBuffer bindWindow(MemoryWindow window, MemoryRegion region, long offset, long length,
                                   AccessFlags access) {
        check(SendOp.BIND_MW);
        if (window.type() != MemoryWindowType.TYPE_2) {
            throw new IllegalStateException(window + " is bound with MemoryWindow.bind, not by a work request");
        }
        for (int k = 0; k < pending; k++) {
            if (pendingWindows[k] == window) {
                throw new IllegalStateException(window + " is already bound in this batch");
            }
        }
        window.checkBind(qp, region, offset, length, access);
        int rkey = MemoryWindow.nextRkey(window.rkey());
        // The request's work leases keep both from being destroyed; taken before the provider sees them.
        window.acquireWork();
        try {
            region.acquireWork();
        } catch (RuntimeException e) {
            window.releaseWork();
            throw e;
        }
        addOperation();
        qp.sendRing.add(window);
        qp.sendRing.add(region);
        MemoryWindow.writeBindInfo(bindInfo, region.handle, region.address() + offset, length, access);
        ProviderCalls.wrBindMw(fn.bindMw(), qpx, window.handle, rkey, bindInfo);
        if (pending == pendingWindows.length) {
            int n = Math.max(4, pending * 2);
            pendingWindows = java.util.Arrays.copyOf(pendingWindows, n);
            pendingRegions = java.util.Arrays.copyOf(pendingRegions, n);
            pendingRkeys = java.util.Arrays.copyOf(pendingRkeys, n);
        }
        pendingWindows[pending] = window;
        pendingRegions[pending] = region;
        pendingRkeys[pending] = rkey;
        pending++;
        return new RemoteBuffer(region.address() + offset, length, rkey);
    }

    /**
     * Sets the one scatter/gather entry of the last operation ({@code ibv_wr_set_sge}).
     *
     * @param region the registered memory
     * @param offset where in it the data starts
     * @param length how many bytes
     * @return this
     * @throws IllegalStateException when the region is closed or its memory was freed
     * @throws IndexOutOfBoundsException when the range is not inside the region
     */
    public ExtendedSendQueue sge(MemoryRegion region, long offset, int length) {
        requireOperation();
        // The provider copies the entry into the send queue now: a closed region or freed memory must
        // fail here. The range check is overflow-safe.
        region.checkUsable();
        region.checkRange(offset, length);
        region.acquireWork();
        // Setting the entry again replaces it, and its lease with it.
        qp.sendRing.put(0, region);
        ProviderCalls.wrSetSge(fn.setSge(), qpx, region.lkey(), region.address() + offset, length);
        return this;
    }

    /**
     * Copies the payload of the last operation into the request ({@code ibv_wr_set_inline_data}); at most
     * {@link QueuePair#maxInlineData()} bytes.
     *
     * @param data native memory, read now
     * @return this
     */
    public ExtendedSendQueue inlineData(MemorySegment data) {
        requireOperation();
        if (!data.isNative() || data.byteSize() > qp.maxInlineData()) {
            throw new IllegalArgumentException("inline data must be native and at most " + qp.maxInlineData()
                    + " bytes, got " + data);
        }
        ProviderCalls.wrSetInlineData(fn.setInline(), qpx, data, data.byteSize());
        return this;
    }

    /**
     * Sets the destination of the last operation on a UD QP ({@code ibv_wr_set_ud_addr}).
     *
     * @param ah the address handle
     * @param remoteQpn the destination QP number
     * @param remoteQkey its queue key
     * @return this
     */
    public ExtendedSendQueue udAddress(AddressHandle ah, int remoteQpn, int remoteQkey) {
        requireOperation();
        ah.acquireWork();
        qp.sendRing.put(1, ah);
        ProviderCalls.wrSetUdAddr(fn.setUdAddr(), qpx, ah.handle, remoteQpn, remoteQkey);
        return this;
    }

    /**
     * Posts the batch ({@code ibv_wr_complete}).
     *
     * @throws RdmaException when the provider refused the batch (nothing of it was posted)
     */
    public void complete() {
        requireStarted();
        int rc = -1;
        try {
            // Published before the provider rings the doorbell: no completion can precede its entry.
            qp.sendRing.publish();
            rc = ProviderCalls.wrComplete(fn.complete(), qpx);
            if (rc == 0) {
                for (int k = 0; k < pending; k++) {
                    pendingWindows[k].posted(pendingRkeys[k], pendingRegions[k], qp);
                }
            }
        } finally {
            if (rc != 0) {
                qp.sendRing.rollback(mark);
            }
            end();
        }
        if (rc != 0) {
            throw RdmaException.of("ibv_wr_complete", rc, "on " + qp);
        }
    }

    /** Drops the batch without posting anything ({@code ibv_wr_abort}). */
    public void abort() {
        requireStarted();
        try {
            ProviderCalls.wrAbort(fn.abort(), qpx);
        } finally {
            qp.sendRing.rollback(mark);
            end();
        }
    }

    private void end() {
        dropPending();
        started = false;
        hasOperation = false;
        qp.sendLock.unlock();
        qp.release();
    }

    private void dropPending() {
        for (int k = 0; k < pending; k++) {
            pendingWindows[k] = null;
            pendingRegions[k] = null;
        }
        pending = 0;
    }

    /** Starts the ring entry of the operation about to be added. */
    private void addOperation() {
        qp.sendRing.begin(nextWrId);
        hasOperation = true;
    }

    private void requireOperation() {
        requireStarted();
        if (!hasOperation) {
            throw new IllegalStateException("no operation to set data for on " + qp + ": add one (send(), "
                    + "rdmaWrite(...), ...) first");
        }
    }

    /** Checks an operation may be added, and starts its ring entry (every operation is one request). */
    private void check(SendOp op) {
        requireStarted();
        if ((ops & op.value()) == 0) {
            throw new IllegalStateException(qp + " was not created with " + op + " among its send operations");
        }
        if (op != SendOp.BIND_MW) {
            addOperation();
        }
    }

    private void requireStarted() {
        if (!started) {
            throw new IllegalStateException("no batch is open on " + qp + ": call start() first");
        }
        assert qp.sendLock.heldByCurrentThread() : "a batch is built by the thread that started it";
    }

    @Override
    public String toString() {
        return "ExtendedSendQueue[qpn=" + ibv_qp.qp_num(qp.handle) + "]";
    }
}
