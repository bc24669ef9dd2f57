package rdmaflux.verbs;

import java.lang.foreign.ValueLayout;

import rdmaflux.verbs.ffi.ibv_mw_bind_info;
import rdmaflux.verbs.ffi.ibv_send_wr;

/**
 * A reusable batch of send work requests ({@code struct ibv_send_wr}). Fill request {@code i} with
 * {@link #set}, its data with {@code sge}, and the opcode's extra fields ({@link #rdma}, {@link #atomic},
 * {@link #ud}, {@link #immediate}, {@link #invalidate}, {@link #bindWindow}); then {@link QueuePair#postSend(SendRequests, int)} posts the first
 * {@code count} as one chain.
 */
public final class SendRequests extends WorkRequestBatch<SendRequests> {
    /** Per request, the immediate in network order: {@code set} clears it, so it is written when posting. */
    private final int[] immediates;
    /** Per request, the address handle {@link #ud} set (leased while posting), or null. */
    private final AddressHandle[] ahs;
    /** Per request, the type-2 window a BIND_MW request binds (leased while posting), or null. */
    private final MemoryWindow[] windows;
    /** Per request, the region of that bind (leased while posting). */
    private final MemoryRegion[] bindRegions;
    /** Per request, the key that bind gives the window. */
    private final int[] bindRkeys;
    /** How many entries of {@link #windows} are set: posting looks at binds only when there are any. */
    private int binds;

    private static final long WR_ID = ibv_send_wr.wr_id$offset();
    private static final long OPCODE = ibv_send_wr.opcode$offset();
    private static final long FLAGS = ibv_send_wr.send_flags$offset();
    private static final long IMM = ibv_send_wr.imm_data$offset();
    private static final long WR = ibv_send_wr.wr$offset();
    private static final long RDMA_ADDR = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.remote_addr$offset();
    private static final long RDMA_RKEY = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.rkey$offset();
    private static final long ATOMIC = WR + ibv_send_wr.wr.atomic$offset();
    private static final long ATOMIC_ADDR = ATOMIC + ibv_send_wr.wr.atomic.remote_addr$offset();
    private static final long ATOMIC_CMP = ATOMIC + ibv_send_wr.wr.atomic.compare_add$offset();
    private static final long ATOMIC_SWAP = ATOMIC + ibv_send_wr.wr.atomic.swap$offset();
    private static final long ATOMIC_RKEY = ATOMIC + ibv_send_wr.wr.atomic.rkey$offset();
    private static final long UD = WR + ibv_send_wr.wr.ud$offset();
    private static final long UD_AH = UD + ibv_send_wr.wr.ud.ah$offset();
    private static final long UD_QPN = UD + ibv_send_wr.wr.ud.remote_qpn$offset();
    private static final long UD_QKEY = UD + ibv_send_wr.wr.ud.remote_qkey$offset();
    private static final long BIND = ibv_send_wr.bind_mw$offset();
    private static final long BIND_MW = BIND + ibv_send_wr.bind_mw.mw$offset();
    private static final long BIND_RKEY = BIND + ibv_send_wr.bind_mw.rkey$offset();
    private static final long BIND_INFO = BIND + ibv_send_wr.bind_mw.bind_info$offset();
    private static final long BIND_MR = BIND_INFO + ibv_mw_bind_info.mr$offset();
    private static final long BIND_ADDR = BIND_INFO + ibv_mw_bind_info.addr$offset();
    private static final long BIND_LENGTH = BIND_INFO + ibv_mw_bind_info.length$offset();
    private static final long BIND_ACCESS = BIND_INFO + ibv_mw_bind_info.mw_access_flags$offset();

    /**
     * Allocates a batch.
     *
     * @param capacity requests per post
     * @param maxSge scatter/gather entries per request
     */
    public SendRequests(int capacity, int maxSge) {
        super(capacity, maxSge, ibv_send_wr.sizeof(), ibv_send_wr.layout().byteAlignment(), WR_ID,
                ibv_send_wr.next$offset(), ibv_send_wr.sg_list$offset(), ibv_send_wr.num_sge$offset());
        this.immediates = new int[capacity];
        this.ahs = new AddressHandle[capacity];
        this.windows = new MemoryWindow[capacity];
        this.bindRegions = new MemoryRegion[capacity];
        this.bindRkeys = new int[capacity];
    }

    /**
     * Starts request {@code i}: id, opcode and flags; clears its scatter/gather entries and immediate.
     *
     * @param i request index
     * @param wrId returned in the completion
     * @param opcode the operation
     * @param sendFlags {@link SendFlag#mask(SendFlag...)} bits
     * @return this
     */
    public SendRequests set(int i, long wrId, SendOpcode opcode, int sendFlags) {
        long wr = offset(i);
        putLong(wr + WR_ID, wrId);
        putInt(wr + OPCODE, opcode.value());
        putInt(wr + FLAGS, sendFlags);
        immediates[i] = 0;
        if (windows[i] != null) {
            windows[i] = null;
            bindRegions[i] = null;
            binds--;
        }
        resetSges(i);
        return this;
    }

    /**
     * Adds flags to request {@code i}, which {@link #set} started: for example {@link SendFlag#SIGNALED} on
     * the last request of a chain whose earlier requests were written unsignaled, once the chain's end is
     * known (on an RC queue pair a signaled completion also ends every request posted before it).
     *
     * @param i request index
     * @param sendFlags {@link SendFlag#mask(SendFlag...)} bits to add to those it has
     * @return this
     */
    public SendRequests addFlags(int i, int sendFlags) {
        long at = offset(i) + FLAGS;
        putInt(at, shadowInt(at) | sendFlags);
        return this;
    }

    /**
     * {@return request {@code i}'s flags, as {@link #set} and {@link #addFlags} wrote them}
     *
     * @param i request index
     */
    public int flags(int i) {
        return shadowInt(offset(i) + FLAGS);
    }

    /**
     * Sets the 32-bit immediate of a SEND_WITH_IMM or RDMA_WRITE_WITH_IMM. It travels in network order;
     * {@link WorkCompletions#immediateData(int)} gives the receiver the same int back.
     *
     * @param i request index
     * @param imm the value
     * @return this
     */
    public SendRequests immediate(int i, int imm) {
        offset(i);
        immediates[i] = Integer.reverseBytes(imm);
        return this;
    }

    /**
     * Sets the key a LOCAL_INV request invalidates on this side, or a SEND_WITH_INV request at the peer
     * ({@code invalidate_rkey}): typically a {@link MemoryWindowType#TYPE_2} window's {@link MemoryWindow#rkey()}.
     *
     * @param i request index
     * @param rkey the key
     * @return this
     */
    public SendRequests invalidate(int i, int rkey) {
        offset(i);
        immediates[i] = rkey; // invalidate_rkey shares imm_data's union: written when posting, unconverted
        return this;
    }

    /**
     * Makes request {@code i}, {@link #set} with {@link SendOpcode#BIND_MW}, bind a type-2 window to a range
     * of a region ({@code ibv_send_wr.bind_mw}) with the window's next key ({@code ibv_inc_rkey}). Posting it
     * checks the QP (RC or UC, the window's PD) and leases the window and the region; once posted, the window
     * holds the region (see {@link MemoryWindow}) and is closed with the QP.
     *
     * @param i request index
     * @param window a {@link MemoryWindowType#TYPE_2} window
     * @param region the region, registered with {@link AccessFlag#MW_BIND} in the window's PD
     * @param offset where in the region the window starts
     * @param length bytes
     * @param access {@link AccessFlag#REMOTE_READ}, {@link AccessFlag#REMOTE_WRITE}, {@link AccessFlag#REMOTE_ATOMIC}
     * @return what the peer gets once the bind completed: the range and the window's new key
     * @throws IllegalStateException for a type-1 window, a request not set to BIND_MW, or anything closed
     * @throws IllegalArgumentException when the region or access do not fit the window
     */
    public RemoteBuffer bindWindow(int i, MemoryWindow window, MemoryRegion region, long offset, long length,
                                   AccessFlags access) {
        long wr = offset(i);
        if (window.type() != MemoryWindowType.TYPE_2) {
            throw new IllegalStateException(window + " is bound with MemoryWindow.bind, not by a work request");
        }
        if (wrs.get(java.lang.foreign.ValueLayout.JAVA_INT, wr + OPCODE) != SendOpcode.BIND_MW.value()) {
            throw new IllegalStateException("work request " + i + " is not a BIND_MW: set(i, wrId, "
                    + "SendOpcode.BIND_MW, flags) first");
        }
        window.checkBind(null, region, offset, length, access);
        int rkey = MemoryWindow.nextRkey(window.rkey());
        putLong(wr + BIND_MW, window.handle.address());
        putInt(wr + BIND_RKEY, rkey);
        putLong(wr + BIND_MR, region.handle.address());
        putLong(wr + BIND_ADDR, region.address() + offset);
        putLong(wr + BIND_LENGTH, length);
        putInt(wr + BIND_ACCESS, MemoryWindow.windowAccess(access));
        if (windows[i] == null) {
            binds++;
        }
        windows[i] = window;
        bindRegions[i] = region;
        bindRkeys[i] = rkey;
        return new RemoteBuffer(region.address() + offset, length, rkey);
    }

    /**
     * Checks the binds among the first {@code count} requests against the QP they are posted to.
     *
     * @throws IllegalArgumentException for a bind with scatter/gather entries (providers refuse them, EINVAL)
     *     or a QP that cannot bind the window
     */
    void checkBinds(int count, QueuePair qp) {
        if (binds == 0) {
            return;
        }
        // link() reports a count beyond the batch; up to there, look.
        for (int k = 0; k < Math.min(count, capacity()); k++) {
            if (windows[k] != null) {
                if (sgeCount(k) != 0) {
                    throw new IllegalArgumentException("work request " + k + " binds a memory window and carries no "
                            + "data, but has " + sgeCount(k) + " scatter/gather entries");
                }
                windows[k].checkQueuePair(qp);
            }
        }
    }

    /** Records the binds among the first {@code posted} requests, which the provider accepted. */
    void commitBinds(int posted, QueuePair qp) {
        if (binds == 0) {
            return;
        }
        for (int k = 0; k < posted; k++) {
            if (windows[k] != null) {
                windows[k].posted(bindRkeys[k], bindRegions[k], qp);
            }
        }
    }

    /**
     * Sets the remote target of an RDMA read or write.
     *
     * @param i request index
     * @param remoteAddress the peer's virtual address
     * @param rkey the peer region's remote key
     * @return this
     */
    public SendRequests rdma(int i, long remoteAddress, int rkey) {
        long wr = offset(i);
        ahs[i] = null; // the same union as a UD destination: that is overwritten
        putLong(wr + RDMA_ADDR, remoteAddress);
        putInt(wr + RDMA_RKEY, rkey);
        return this;
    }

    /**
     * Sets the target and operands of an atomic; the remote address must be 8-byte aligned.
     *
     * @param i request index
     * @param remoteAddress the peer's 64-bit word
     * @param rkey the peer region's remote key
     * @param compareOrAdd the compare value (CMP_AND_SWP) or the addend (FETCH_AND_ADD)
     * @param swap the new value for CMP_AND_SWP (ignored by FETCH_AND_ADD)
     * @return this
     */
    public SendRequests atomic(int i, long remoteAddress, int rkey, long compareOrAdd, long swap) {
        if ((remoteAddress & 7) != 0) {
            throw new IllegalArgumentException("atomics need an 8-byte aligned remote address, got 0x"
                    + Long.toHexString(remoteAddress));
        }
        long wr = offset(i);
        ahs[i] = null; // the same union as a UD destination: that is overwritten
        putLong(wr + ATOMIC_ADDR, remoteAddress);
        putInt(wr + ATOMIC_RKEY, rkey);
        putLong(wr + ATOMIC_CMP, compareOrAdd);
        putLong(wr + ATOMIC_SWAP, swap);
        return this;
    }

    /**
     * Sets the destination of a UD send.
     *
     * @param i request index
     * @param ah the address handle; posting fails with {@link IllegalStateException} once it is closed (it
     *           is remembered until {@link #rdma} or {@link #atomic} overwrite the destination, and each
     *           posted request holds it until its completion is polled)
     * @param remoteQpn the destination QP number (0xFFFFFF for multicast)
     * @param remoteQkey the destination's queue key
     * @return this
     * @throws IllegalStateException when the address handle is closed
     */
    public SendRequests ud(int i, AddressHandle ah, int remoteQpn, int remoteQkey) {
        ah.checkOpen();
        long wr = offset(i);
        ahs[i] = ah;
        putLong(wr + UD_AH, ah.handle.address());
        putInt(wr + UD_QPN, remoteQpn);
        putInt(wr + UD_QKEY, remoteQkey);
        return this;
    }

    /**
     * Sets the request index.
     *
     * @param i request index
     * @return the work request id set for it
     */
    public long wrId(int i) {
        return wrs.get(ValueLayout.JAVA_LONG, offset(i) + WR_ID);
    }

    @Override
    NativeResource leaseExtra(int i, int k) {
        MemoryWindow w = windows[i];
        if (w != null) {
            return k == 0 ? w : bindRegions[i];
        }
        return k == 0 ? ahs[i] : null;
    }

    @Override
    void linkExtra(long wrOffset, int i) {
        putInt(wrOffset + IMM, immediates[i]);
    }

    RdmaException postFailure(String operation, int errno) {
        return postFailure(operation, errno, WR_ID);
    }
}
