package rdmaflux.verbs;

/**
 * An operation a QP made with {@link ProtectionDomain#createExtendedQueuePair} may post through its
 * {@link ExtendedSendQueue} ({@code enum ibv_qp_create_send_ops_flags}); the set is fixed at creation,
 * and a provider that cannot do one refuses the QP with EOPNOTSUPP ({@link RdmaUnsupportedException}).
 */
public enum SendOp implements NativeConstant {
    /** {@code ibv_wr_rdma_write}. */
    RDMA_WRITE(1),
    /** {@code ibv_wr_rdma_write_imm}. */
    RDMA_WRITE_WITH_IMM(1 << 1),
    /** {@code ibv_wr_send}. */
    SEND(1 << 2),
    /** {@code ibv_wr_send_imm}. */
    SEND_WITH_IMM(1 << 3),
    /** {@code ibv_wr_rdma_read}. */
    RDMA_READ(1 << 4),
    /** {@code ibv_wr_atomic_cmp_swp}. */
    ATOMIC_CMP_AND_SWP(1 << 5),
    /** {@code ibv_wr_atomic_fetch_add}. */
    ATOMIC_FETCH_AND_ADD(1 << 6),
    /** {@code ibv_wr_local_inv}. */
    LOCAL_INV(1 << 7),
    /** {@code ibv_wr_bind_mw}: {@link ExtendedSendQueue#bindWindow}. */
    BIND_MW(1 << 8),
    /** {@code ibv_wr_send_inv}. */
    SEND_WITH_INV(1 << 9),
    /** {@code ibv_wr_send_tso} (UD over Ethernet only; not postable through rdmaflux yet). */
    TSO(1 << 10),
    /** {@code ibv_wr_atomic_write}: an 8-byte write that lands atomically. */
    ATOMIC_WRITE(1 << 12);

    private final int value;

    SendOp(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_QP_EX_WITH_" + name();
    }
}
