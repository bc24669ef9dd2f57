package rdmaflux.verbs;

/** What kind of node a device is ({@code enum ibv_node_type}, {@code ibv_device.node_type}). */
public enum NodeType implements NativeConstant {
    /** The device did not say, or reported a value this version does not know. */
    UNKNOWN(-1),
    /** Channel adapter: InfiniBand HCAs and RoCE devices, Soft-RoCE included. */
    CA(1),
    /** InfiniBand switch. */
    SWITCH(2),
    /** InfiniBand router. */
    ROUTER(3),
    /** RDMA NIC: iWARP devices. */
    RNIC(4),
    /** Cisco usNIC. */
    USNIC(5),
    /** Cisco usNIC over UDP. */
    USNIC_UDP(6),
    /** A device with no defined node type. */
    UNSPECIFIED(7);

    private final int value;

    NodeType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_NODE_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant, {@link #UNKNOWN} for a value this version does not know (so that a device of
     *         a newer kind is still listable)
     */
    public static NodeType of(int value) {
        NodeType t = NativeConstant.find(values(), value);
        return t != null ? t : UNKNOWN;
    }
}
