package rdmaflux.verbs;

/**
 * How a GID table entry is used on the wire ({@code enum ibv_gid_type}).
 *
 * <p>On RoCE ports every address appears once per RoCE version the device supports; connections
 * through the RDMA CM use RoCE v2 (UDP/IP encapsulation, routable) where the device offers it.
 */
public enum GidType implements NativeConstant {
    /** An InfiniBand GID (port on an InfiniBand link layer). */
    IB(0),
    /** RoCE v1: GRH directly over Ethernet (ethertype 0x8915), not routable across IP subnets. */
    ROCE_V1(1),
    /** RoCE v2: over UDP port 4791, routable; the GID is the interface's IPv6 or IPv4-mapped address. */
    ROCE_V2(2);

    private final int value;

    GidType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_GID_TYPE_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static GidType of(int value) {
        GidType t = NativeConstant.find(values(), value);
        if (t == null) {
            throw new IllegalArgumentException("unknown IBV_GID_TYPE_* value " + value);
        }
        return t;
    }
}
