package rdmaflux.verbs;

import java.lang.foreign.ValueLayout;

import rdmaflux.verbs.ffi.ibv_send_wr;

/**
 * A reusable batch of send work requests ({@code struct ibv_send_wr}). Fill request {@code i} with
 * {@link #set}, its data with {@code sge}, and the opcode's extra fields ({@link #rdma}, {@link #atomic},
 * {@link #ud}, {@link #immediate}); then {@link QueuePair#postSend(SendRequests, int)} posts the first
 * {@code count} as one chain.
 */
public final class SendRequests extends WorkRequestBatch<SendRequests> {
    /** Per request, the immediate in network order: {@code set} clears it, so it is written when posting. */
    private final int[] immediates;
    /** Per request, the address handle {@link #ud} set (leased while posting), or null. */
    private final AddressHandle[] ahs;

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
        resetSges(i);
        return this;
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
     *           is remembered, and leased while the request is posted, until {@link #rdma} or
     *           {@link #atomic} overwrite the destination)
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
    NativeResource leaseExtra(int i) {
        return ahs[i];
    }

    @Override
    void linkExtra(long wrOffset, int i) {
        putInt(wrOffset + IMM, immediates[i]);
    }

    RdmaException postFailure(String operation, int errno) {
        return postFailure(operation, errno, WR_ID);
    }
}
