package rdmaflux.verbs;

import java.util.EnumSet;
import java.util.Set;

/**
 * A bit of {@code ibv_device_attr.device_cap_flags} ({@code enum ibv_device_cap_flags}); see
 * {@link DeviceAttributes#capabilities()}.
 */
public enum DeviceCapability implements NativeConstant {
    /** The maximum number of work requests of a QP can be changed. */
    RESIZE_MAX_WR(1),
    /** The device counts bad P_Keys. */
    BAD_PKEY_CNTR(1 << 1),
    /** The device counts Q_Key violations. */
    BAD_QKEY_CNTR(1 << 2),
    /** Raw multicast. */
    RAW_MULTI(1 << 3),
    /** Automatic path migration. */
    AUTO_PATH_MIG(1 << 4),
    /** The port of a QP can be changed on SQD to RTS. */
    CHANGE_PHY_PORT(1 << 5),
    /** UD address handles are checked against the QP's port. */
    UD_AV_PORT_ENFORCE(1 << 6),
    /** The current QP state can be passed to modify_qp. */
    CURR_QP_STATE_MOD(1 << 7),
    /** Ports can be shut down. */
    SHUTDOWN_PORT(1 << 8),
    /** InitType and InitTypeReply are supported. */
    INIT_TYPE(1 << 9),
    /** The device raises a port-active asynchronous event. */
    PORT_ACTIVE_EVENT(1 << 10),
    /** The device reports a system image GUID. */
    SYS_IMAGE_GUID(1 << 11),
    /** RC QPs send RNR NAKs. */
    RC_RNR_NAK_GEN(1 << 12),
    /** Shared receive queues can be resized. */
    SRQ_RESIZE(1 << 13),
    /** CQs can notify after N completions. */
    N_NOTIFY_CQ(1 << 14),
    /** Memory windows. */
    MEM_WINDOW(1 << 17),
    /** IP checksum offload on UD QPs. */
    UD_IP_CSUM(1 << 18),
    /** Extended reliable connection (XRC) transport. */
    XRC(1 << 20),
    /** Memory management extensions (fast registration, local invalidate). */
    MEM_MGT_EXTENSIONS(1 << 21),
    /** Type 2A memory windows. */
    MEM_WINDOW_TYPE_2A(1 << 23),
    /** Type 2B memory windows. */
    MEM_WINDOW_TYPE_2B(1 << 24),
    /** IP checksum offload on RC QPs. */
    RC_IP_CSUM(1 << 25),
    /** IP checksum offload on raw packet QPs. */
    RAW_IP_CSUM(1 << 26),
    /** Flow steering rules. */
    MANAGED_FLOW_STEERING(1 << 29);

    private static final int KNOWN = NativeConstant.mask(EnumSet.allOf(DeviceCapability.class));

    private final int value;

    DeviceCapability(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_DEVICE_" + name();
    }

    /**
     * Decodes a native mask.
     *
     * @param flags {@code device_cap_flags}
     * @return the capabilities among them that this version knows, in bit order (a new modifiable set)
     */
    public static Set<DeviceCapability> decode(int flags) {
        return NativeConstant.decode(DeviceCapability.class, flags);
    }

    /**
     * Finds the capability bits this version of rdmaflux has no name for.
     *
     * @param flags {@code device_cap_flags}
     * @return the bits of {@code flags} that no constant of this version stands for
     */
    public static int unknownBits(int flags) {
        return flags & ~KNOWN;
    }

}
