package rdmaflux.verbs;

import java.util.Set;

/**
 * What {@code ibv_query_port} reports, copied.
 *
 * @param state logical port state
 * @param maxMtu largest MTU the port supports
 * @param activeMtu MTU in use; what connections should use as path MTU
 * @param gidTableLength entries in the GID table
 * @param lid local identifier (0 on RoCE)
 * @param smLid subnet manager LID
 * @param maxMessageSize largest message in bytes
 * @param linkLayer 1 InfiniBand, 2 Ethernet (RoCE)
 * @param activeWidth encoded link width
 * @param activeSpeed encoded link speed
 * @param physicalState physical state (5 = LinkUp)
 * @param capabilityFlags {@code port_cap_flags}; {@link #capabilities()} decodes them
 * @param capabilityFlags2 {@code port_cap_flags2} ({@code enum ibv_port_cap_flags2})
 * @param pkeyTableLength entries in the partition key table
 * @param lmc LID mask control: the port answers to 2<sup>lmc</sup> LIDs from {@link #lid()} on
 *            (always 0 on RoCE)
 * @param maxVlNum encoded number of virtual lanes (1 = 1, 2 = 2, 3 = 4, 4 = 8, 5 = 15)
 * @param smSl service level to reach the subnet manager with
 * @param subnetTimeout subnet propagation delay (exponent: 4.096 µs × 2<sup>value</sup>)
 * @param initTypeReply InitTypeReply the subnet manager set
 * @param badPkeyCounter bad P_Key counter
 * @param qkeyViolationCounter Q_Key violation counter
 * @param flags {@code flags} ({@code IBV_QPF_*}); see {@link #grhRequired()}
 */
public record PortAttributes(PortState state, Mtu maxMtu, Mtu activeMtu, int gidTableLength, int lid, int smLid,
                             long maxMessageSize, int linkLayer, int activeWidth, int activeSpeed, int physicalState,
                             int capabilityFlags, int capabilityFlags2, int pkeyTableLength, int lmc, int maxVlNum,
                             int smSl, int subnetTimeout, int initTypeReply, int badPkeyCounter,
                             int qkeyViolationCounter, int flags) {
    /** Link layer value of RoCE ports. */
    public static final int LINK_LAYER_ETHERNET = 2;
    /** Link layer value of InfiniBand ports. */
    public static final int LINK_LAYER_INFINIBAND = 1;
    /** {@code IBV_QPF_GRH_REQUIRED}: the bit of {@link #flags()} that makes a GRH mandatory. */
    public static final int FLAG_GRH_REQUIRED = 1;

    /** {@return whether this is a RoCE (Ethernet) port, which needs GIDs rather than LIDs for addressing} */
    public boolean isEthernet() {
        return linkLayer == LINK_LAYER_ETHERNET;
    }

    /**
     * {@return whether the port demands a GRH (global routing header) in every address handle and connected QP; RoCE needs one anyway}
     */
    public boolean grhRequired() {
        return (flags & FLAG_GRH_REQUIRED) != 0;
    }

    /** {@return the known bits of {@link #capabilityFlags()}, in bit order (a new modifiable set)} */
    public Set<PortCapability> capabilities() {
        return PortCapability.decode(capabilityFlags);
    }

    /**
     * Tells whether the port reports a capability.
     *
     * @param capability a capability
     * @return whether the port reports it
     */
    public boolean hasCapability(PortCapability capability) {
        return (capabilityFlags & capability.value()) != 0;
    }
}
