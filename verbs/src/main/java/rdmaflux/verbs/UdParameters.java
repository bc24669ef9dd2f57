package rdmaflux.verbs;

/**
 * Datagram parameters ({@code struct rdma_ud_param}) carried by UDP-port-space and multicast events:
 * everything needed to send to the peer or group.
 *
 * @param privateData private data, never {@code null}
 * @param addressHandle where to send: pass to {@link ProtectionDomain#createAddressHandle(AddressHandleAttributes)}
 * @param qpNumber remote QP number (0xFFFFFF for multicast)
 * @param qkey remote queue key
 */
public record UdParameters(byte[] privateData, AddressHandleAttributes addressHandle, int qpNumber, int qkey) {
    /** Copies the private data. */
    public UdParameters {
        privateData = privateData == null ? new byte[0] : privateData.clone();
    }

    /** {@return a copy of the private data} */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }
}
