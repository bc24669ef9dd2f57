package rdmaflux.verbs;

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
 */
public record PortAttributes(PortState state, Mtu maxMtu, Mtu activeMtu, int gidTableLength, int lid, int smLid,
                             long maxMessageSize, int linkLayer, int activeWidth, int activeSpeed, int physicalState) {
    /** Link layer value of RoCE ports. */
    public static final int LINK_LAYER_ETHERNET = 2;
    /** Link layer value of InfiniBand ports. */
    public static final int LINK_LAYER_INFINIBAND = 1;

    /** @return whether this is a RoCE (Ethernet) port, which needs GIDs rather than LIDs for addressing */
    public boolean isEthernet() {
        return linkLayer == LINK_LAYER_ETHERNET;
    }
}
