package rdmaflux.verbs;

/**
 * Whether memory registered in this process is safe across {@code fork()} ({@code enum ibv_fork_status},
 * from {@code ibv_is_fork_initialized()}): see {@link Rdma#forkStatus()} and docs/reliability.md, "Child
 * processes".
 */
public enum ForkStatus implements NativeConstant {
    /**
     * The kernel shares registered pages copy-on-write with a forked child and libibverbs does not keep them
     * out of it ({@code ibv_fork_init()} was not called, {@code RDMAV_FORK_SAFE} is unset): a parent that writes
     * to registered memory while a forked child lives may leave the device on the child's copy.
     */
    DISABLED(0),
    /** libibverbs marks registered memory {@code MADV_DONTFORK} ({@code ibv_fork_init()} or {@code RDMAV_FORK_SAFE}). */
    ENABLED(1),
    /** The kernel copies pinned (DMA) pages for a forked child at fork time: nothing is needed. */
    UNNEEDED(2);

    private final int value;

    ForkStatus(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_FORK_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static ForkStatus of(int value) {
        for (ForkStatus s : values()) {
            if (s.value == value) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown IBV_FORK_* value " + value);
    }
}
