package rdmaflux.verbs;

/**
 * A connection manager event ({@code struct rdma_cm_event}), copied and already acknowledged.
 *
 * @param type the event
 * @param status 0, a negative errno for error events, or the CM reject reason for {@link CmEventType#REJECTED}
 * @param id the id the event is for; for {@link CmEventType#CONNECT_REQUEST} a new id owned by the caller,
 *           to accept, reject or close. {@code null} when the id was closed before the event was read.
 * @param listenId the listening id, for connect requests; otherwise {@code null}
 * @param connection the peer's connection parameters (connected port spaces), or {@code null}
 * @param datagram the datagram parameters (UDP port space, multicast), or {@code null}
 */
public record CmEvent(CmEventType type, int status, CmId id, CmId listenId, ConnectionParameters connection,
                      UdParameters datagram) {

    /** {@return the private data the peer sent with this event (empty if none)} */
    public byte[] privateData() {
        if (connection != null) {
            return connection.privateData();
        }
        return datagram != null ? datagram.privateData() : new byte[0];
    }

    @Override
    public String toString() {
        return "CmEvent[" + type + ", status=" + status + ", id=" + id + "]";
    }
}
