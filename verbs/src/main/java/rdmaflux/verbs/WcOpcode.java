package rdmaflux.verbs;

/** The operation a work completion reports ({@code enum ibv_wc_opcode}). */
public enum WcOpcode implements NativeConstant {
    /** A send finished. */
    SEND(0),
    /** An RDMA write finished. */
    RDMA_WRITE(1),
    /** An RDMA read finished. */
    RDMA_READ(2),
    /** An atomic compare-and-swap finished. */
    COMP_SWAP(3),
    /** An atomic fetch-and-add finished. */
    FETCH_ADD(4),
    /** A memory-window bind finished. */
    BIND_MW(5),
    /** A local invalidate finished. */
    LOCAL_INV(6),
    /** A TCP segmentation offload send finished. */
    TSO(7),
    /** A receive consumed a message. */
    RECV(128),
    /** A receive consumed by an RDMA write with immediate. */
    RECV_RDMA_WITH_IMM(129);

    private static final WcOpcode[] BY_VALUE = NativeConstant.index(WcOpcode.values(), 129);

    private final int value;

    WcOpcode(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
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
    public static WcOpcode of(int value) {
        WcOpcode c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_WC_* value " + value);
        }
        return c;
    }
}
