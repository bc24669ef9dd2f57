package rdmaflux.verbs;

/**
 * The transport a device speaks ({@code enum ibv_transport_type}, {@code ibv_device.transport_type}).
 *
 * <p>RoCE devices (Soft-RoCE included) report {@link #IB}: they carry the InfiniBand transport over
 * Ethernet, which {@link PortAttributes#isEthernet()} tells apart.
 */
public enum Transport implements NativeConstant {
    /** The device did not say, or reported a value this version does not know. */
    UNKNOWN(-1),
    /** InfiniBand transport: InfiniBand HCAs and RoCE devices. */
    IB(0),
    /** iWARP (RDMA over TCP). */
    IWARP(1),
    /** Cisco usNIC. */
    USNIC(2),
    /** Cisco usNIC over UDP. */
    USNIC_UDP(3),
    /** A device with no defined transport (e.g. some vendor-specific engines). */
    UNSPECIFIED(4);

    private final int value;

    Transport(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_TRANSPORT_" + name();
    }

    /**
     * The constant with a native value. Unlike the enums that decode completions, an unknown value
     * maps to {@link #UNKNOWN} rather than failing: a device of a newer transport must still be listable.
     *
     * @param value the C enum value
     * @return the constant, {@link #UNKNOWN} for a value this version does not know
     */
    public static Transport of(int value) {
        Transport t = NativeConstant.find(values(), value);
        return t != null ? t : UNKNOWN;
    }
}
