package rdmaflux.verbs;

/** Flags of a send work request ({@code enum ibv_send_flags}); combine with {@link #mask(SendFlag...)}. */
public enum SendFlag implements NativeConstant {
    /** Waits for prior RDMA reads and atomics to complete before this one starts. */
    FENCE(1),
    /** Generates a completion for this work request. */
    SIGNALED(1 << 1),
    /** Makes the peer's completion wake a solicited-only notification. */
    SOLICITED(1 << 2),
    /** Copies the payload into the work request; no lkey needed, limited to the QP's max_inline_data. */
    INLINE(1 << 3);

    private final int value;

    SendFlag(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_SEND_" + name();
    }

    /**
     * ORs flags into the native bit mask.
     *
     * @param flags the flags
     * @return the mask for {@code ibv_send_wr.send_flags}
     */
    public static int mask(SendFlag... flags) {
        int m = 0;
        for (SendFlag f : flags) {
            m |= f.value;
        }
        return m;
    }
}
