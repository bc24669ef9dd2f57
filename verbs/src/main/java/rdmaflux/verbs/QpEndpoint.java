package rdmaflux.verbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * What one side of a reliable (or unreliable) connection tells the other out of band, e.g. over a TCP
 * socket, before {@link QueuePair#connect}: the same fields as the classic rc_pingpong exchange.
 *
 * @param qpNumber the QP number
 * @param psn the initial packet sequence number (24 bits)
 * @param lid the port's LID (InfiniBand; 0 on RoCE)
 * @param gid the port GID used for routing (required on RoCE)
 * @param mtu the MTU the side wants; both sides use the smaller
 */
public record QpEndpoint(int qpNumber, int psn, int lid, Gid gid, Mtu mtu) {
    /** Bytes {@link #writeTo} produces. */
    public static final int ENCODED_SIZE = 4 + 4 + 2 + 16 + 1;

    /** Validates the endpoint. */
    public QpEndpoint {
        Objects.requireNonNull(gid, "gid");
        Objects.requireNonNull(mtu, "mtu");
        if ((psn & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("PSN is 24 bits, got 0x" + Integer.toHexString(psn));
        }
    }

    /**
     * Encodes for the wire (big-endian).
     *
     * @param buf receives {@link #ENCODED_SIZE} bytes
     */
    public void writeTo(ByteBuffer buf) {
        buf.order(ByteOrder.BIG_ENDIAN).putInt(qpNumber).putInt(psn).putShort((short) lid).put(gid.toBytes())
                .put((byte) mtu.value());
    }

    /**
     * Decodes what {@link #writeTo} wrote.
     *
     * @param buf holds {@link #ENCODED_SIZE} bytes
     * @return the endpoint
     */
    public static QpEndpoint readFrom(ByteBuffer buf) {
        buf.order(ByteOrder.BIG_ENDIAN);
        int qpn = buf.getInt();
        int psn = buf.getInt();
        int lid = Short.toUnsignedInt(buf.getShort());
        byte[] gid = new byte[16];
        buf.get(gid);
        return new QpEndpoint(qpn, psn, lid, Gid.of(gid), Mtu.of(buf.get()));
    }
}
