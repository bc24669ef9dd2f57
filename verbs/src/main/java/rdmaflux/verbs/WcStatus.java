package rdmaflux.verbs;

/** The status of a work completion ({@code enum ibv_wc_status}); anything but {@link #SUCCESS} moves an RC QP to the error state. */
public enum WcStatus implements NativeConstant {
    /** {@code IBV_WC_SUCCESS}. */
    SUCCESS(0),
    /** {@code IBV_WC_LOC_LEN_ERR}. */
    LOC_LEN_ERR(1),
    /** {@code IBV_WC_LOC_QP_OP_ERR}. */
    LOC_QP_OP_ERR(2),
    /** {@code IBV_WC_LOC_EEC_OP_ERR}. */
    LOC_EEC_OP_ERR(3),
    /** {@code IBV_WC_LOC_PROT_ERR}. */
    LOC_PROT_ERR(4),
    /** {@code IBV_WC_WR_FLUSH_ERR}. */
    WR_FLUSH_ERR(5),
    /** {@code IBV_WC_MW_BIND_ERR}. */
    MW_BIND_ERR(6),
    /** {@code IBV_WC_BAD_RESP_ERR}. */
    BAD_RESP_ERR(7),
    /** {@code IBV_WC_LOC_ACCESS_ERR}. */
    LOC_ACCESS_ERR(8),
    /** {@code IBV_WC_REM_INV_REQ_ERR}. */
    REM_INV_REQ_ERR(9),
    /** {@code IBV_WC_REM_ACCESS_ERR}. */
    REM_ACCESS_ERR(10),
    /** {@code IBV_WC_REM_OP_ERR}. */
    REM_OP_ERR(11),
    /** {@code IBV_WC_RETRY_EXC_ERR}. */
    RETRY_EXC_ERR(12),
    /** {@code IBV_WC_RNR_RETRY_EXC_ERR}. */
    RNR_RETRY_EXC_ERR(13),
    /** {@code IBV_WC_LOC_RDD_VIOL_ERR}. */
    LOC_RDD_VIOL_ERR(14),
    /** {@code IBV_WC_REM_INV_RD_REQ_ERR}. */
    REM_INV_RD_REQ_ERR(15),
    /** {@code IBV_WC_REM_ABORT_ERR}. */
    REM_ABORT_ERR(16),
    /** {@code IBV_WC_INV_EECN_ERR}. */
    INV_EECN_ERR(17),
    /** {@code IBV_WC_INV_EEC_STATE_ERR}. */
    INV_EEC_STATE_ERR(18),
    /** {@code IBV_WC_FATAL_ERR}. */
    FATAL_ERR(19),
    /** {@code IBV_WC_RESP_TIMEOUT_ERR}. */
    RESP_TIMEOUT_ERR(20),
    /** {@code IBV_WC_GENERAL_ERR}. */
    GENERAL_ERR(21),
    /** {@code IBV_WC_TM_ERR}. */
    TM_ERR(22),
    /** {@code IBV_WC_TM_RNDV_INCOMPLETE}. */
    TM_RNDV_INCOMPLETE(23);

    private static final WcStatus[] BY_VALUE = NativeConstant.index(WcStatus.values(), 23);

    private final int value;

    WcStatus(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    /** {@return rdma-core's text for this status ({@code ibv_wc_status_str}), e.g. "remote access error"} */
    public String description() {
        return Calls.Plain.wcStatusText(value);
    }

    @Override
    public String nativeName() {
        return "IBV_WC_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static WcStatus of(int value) {
        WcStatus c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_WC_* value " + value);
        }
        return c;
    }
}
