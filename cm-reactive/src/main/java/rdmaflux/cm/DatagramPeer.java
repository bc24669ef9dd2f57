package rdmaflux.cm;

import java.net.InetSocketAddress;

import rdmaflux.verbs.AddressHandle;

/**
 * Where a {@link RdmaDatagramEndpoint} sends to: the peer's QP number and qkey plus an address handle
 * in the endpoint's protection domain. Obtained from {@link RdmaDatagramEndpoint#resolve} or
 * {@link RdmaDatagramEndpoint#peerOf}; valid until its endpoint is disposed, and only with that endpoint.
 */
public final class DatagramPeer {
    private final Object owner;
    private final InetSocketAddress address;
    private final int qpNumber;
    private final int qkey;
    final AddressHandle addressHandle;

    DatagramPeer(Object owner, InetSocketAddress address, int qpNumber, int qkey, AddressHandle addressHandle) {
        this.owner = owner;
        this.address = address;
        this.qpNumber = qpNumber;
        this.qkey = qkey;
        this.addressHandle = addressHandle;
    }

    boolean belongsTo(Object endpoint) {
        return owner == endpoint;
    }

    /**
     * {@return the peer's IP address and the port it was resolved at; port 0 for peers made from a
     * received datagram (UD datagrams carry no port)}
     */
    public InetSocketAddress address() {
        return address;
    }

    /** {@return the peer's QP number} */
    public int qpNumber() {
        return qpNumber;
    }

    /** {@return the peer's qkey} */
    public int qkey() {
        return qkey;
    }

    @Override
    public String toString() {
        return "DatagramPeer[" + address + ", qpn " + qpNumber + ", qkey 0x" + Integer.toHexString(qkey) + "]";
    }
}
