package rdmaflux.verbs;

import java.util.Set;

/**
 * A bit of {@code ibv_port_attr.port_cap_flags} ({@code enum ibv_port_cap_flags}, the CapabilityMask of
 * the InfiniBand PortInfo); see {@link PortAttributes#capabilities()}.
 */
public enum PortCapability implements NativeConstant {
    /** A subnet manager runs on this port. */
    SM(1 << 1),
    /** Notices are supported. */
    NOTICE_SUP(1 << 2),
    /** Traps are supported. */
    TRAP_SUP(1 << 3),
    /** Optional inter-packet delay. */
    OPT_IPD_SUP(1 << 4),
    /** Automatic path migration. */
    AUTO_MIGR_SUP(1 << 5),
    /** SL to VL mapping. */
    SL_MAP_SUP(1 << 6),
    /** M_Key kept in non-volatile memory. */
    MKEY_NVRAM(1 << 7),
    /** P_Key table kept in non-volatile memory. */
    PKEY_NVRAM(1 << 8),
    /** LED info. */
    LED_INFO_SUP(1 << 9),
    /** System image GUID. */
    SYS_IMAGE_GUID_SUP(1 << 11),
    /** P_Key switch external port trap. */
    PKEY_SW_EXT_PORT_TRAP_SUP(1 << 12),
    /** Extended link speeds. */
    EXTENDED_SPEEDS_SUP(1 << 14),
    /** The port has a second capability mask ({@link PortAttributes#capabilityFlags2()}). */
    CAP_MASK2_SUP(1 << 15),
    /** Communication management is supported on this port. */
    CM_SUP(1 << 16),
    /** SNMP tunnelling. */
    SNMP_TUNNEL_SUP(1 << 17),
    /** The port can be reinitialised. */
    REINIT_SUP(1 << 18),
    /** Device management. */
    DEVICE_MGMT_SUP(1 << 19),
    /** Vendor-specific management classes. */
    VENDOR_CLASS_SUP(1 << 20),
    /** Directed-route notices. */
    DR_NOTICE_SUP(1 << 21),
    /** Notices on capability mask changes. */
    CAP_MASK_NOTICE_SUP(1 << 22),
    /** Boot management. */
    BOOT_MGMT_SUP(1 << 23),
    /** Link round-trip latency measurement. */
    LINK_LATENCY_SUP(1 << 24),
    /** Client re-registration. */
    CLIENT_REG_SUP(1 << 25),
    /** GIDs are derived from IP addresses (RoCE). */
    IP_BASED_GIDS(1 << 26);

    private final int value;

    PortCapability(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_PORT_" + name();
    }

    /**
     * Decodes a native mask.
     *
     * @param flags {@code port_cap_flags}
     * @return the capabilities among them that this version knows, in bit order (a new modifiable set)
     */
    public static Set<PortCapability> decode(int flags) {
        return NativeConstant.decode(PortCapability.class, flags);
    }
}
