package rdmaflux.verbs;

/** The operation of a send work request ({@code enum ibv_wr_opcode}). */
public enum SendOpcode implements NativeConstant {
    /** Writes local data into remote memory. */
    RDMA_WRITE(0),
    /** RDMA write that also consumes a receive at the peer and delivers 32 bits of immediate data. */
    RDMA_WRITE_WITH_IMM(1),
    /** Sends a message into the peer's next posted receive. */
    SEND(2),
    /** Send carrying 32 bits of immediate data. */
    SEND_WITH_IMM(3),
    /** Reads remote memory into local memory. */
    RDMA_READ(4),
    /** 64-bit atomic compare-and-swap on remote memory; the old value lands locally. */
    ATOMIC_CMP_AND_SWP(5),
    /** 64-bit atomic fetch-and-add on remote memory; the old value lands locally. */
    ATOMIC_FETCH_AND_ADD(6),
    /** Local invalidate of a memory window or MR key. */
    LOCAL_INV(7),
    /** Binds a memory window. */
    BIND_MW(8),
    /** Send that invalidates a remote key. */
    SEND_WITH_INV(9);

    private static final SendOpcode[] BY_VALUE = NativeConstant.index(SendOpcode.values(), 9);

    private final int value;

    SendOpcode(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_WR_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static SendOpcode of(int value) {
        SendOpcode c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_WR_* value " + value);
        }
        return c;
    }
}
