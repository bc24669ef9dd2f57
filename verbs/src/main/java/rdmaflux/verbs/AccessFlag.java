package rdmaflux.verbs;

/** Memory and QP access rights ({@code enum ibv_access_flags}); combined in {@link AccessFlags}. */
public enum AccessFlag implements NativeConstant {
    /** The local HCA may write into the region (needed for receives and for RDMA read targets). */
    LOCAL_WRITE(1),
    /** Peers may RDMA-write into the region. */
    REMOTE_WRITE(1 << 1),
    /** Peers may RDMA-read the region. */
    REMOTE_READ(1 << 2),
    /** Peers may run atomics on the region. */
    REMOTE_ATOMIC(1 << 3),
    /** Memory windows may be bound to the region. */
    MW_BIND(1 << 4),
    /** Remote addresses are offsets from the region's start. */
    ZERO_BASED(1 << 5),
    /** On-demand paging. */
    ON_DEMAND(1 << 6),
    /** The region is backed by huge pages. */
    HUGETLB(1 << 7),
    /** Relaxed PCI ordering, ignored where unsupported. */
    RELAXED_ORDERING(1 << 20);

    private final int value;

    AccessFlag(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_ACCESS_" + name();
    }
}
