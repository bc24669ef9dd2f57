package rdmaflux.verbs;

/** The kind of a {@link MemoryWindow} ({@code enum ibv_mw_type}). */
public enum MemoryWindowType implements NativeConstant {
    /**
     * Bound with {@link MemoryWindow#bind} ({@code ibv_bind_mw}); usable through any QP of its PD; a new bind
     * replaces the old key.
     */
    TYPE_1(1),
    /**
     * Bound by posting a work request ({@code IBV_WR_BIND_MW} / {@code ibv_wr_bind_mw}); usable only through
     * the QP that bound it; revoked with {@code LOCAL_INV} or the peer's {@code SEND_WITH_INV}.
     */
    TYPE_2(2);

    private final int value;

    MemoryWindowType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_MW_" + name();
    }
}
