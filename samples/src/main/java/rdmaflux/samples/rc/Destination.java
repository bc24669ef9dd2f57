package rdmaflux.samples.rc;

import java.util.HexFormat;

import rdmaflux.verbs.Gid;
import rdmaflux.verbs.Mtu;
import rdmaflux.verbs.QpEndpoint;
import rdmaflux.verbs.RemoteBuffer;

/**
 * What the two sides of the RC example tell each other over TCP: the fields of rc_pingpong's text
 * exchange (LID, QP number, PSN, GID as 32 hex digits) plus the path MTU and the buffer the peer may
 * RDMA-read and -write.
 *
 * <p>One line of colon-separated hex fields: {@code lid:qpn:psn:gid:mtu:address:length:rkey}, e.g.
 * {@code 0000:000011:3f2a10:00000000000000000000ffffc0000201:3:00007f3c5c001000:0000000000001000:00000201}.
 *
 * @param endpoint the QP's address for {@link rdmaflux.verbs.QueuePair#connect}
 * @param buffer the region the peer may use for RDMA READ and WRITE
 */
public record Destination(QpEndpoint endpoint, RemoteBuffer buffer) {
    private static final HexFormat HEX = HexFormat.of();

    /** {@return the line to send, without line terminator} */
    public String toWire() {
        return String.format("%04x:%06x:%06x:%s:%d:%016x:%016x:%08x", endpoint.lid(), endpoint.qpNumber(),
                endpoint.psn(), HEX.formatHex(endpoint.gid().toBytes()), endpoint.mtu().value(), buffer.address(),
                buffer.length(), buffer.rkey());
    }

    /**
     * Parses what {@link #toWire()} wrote.
     *
     * @param line the received line
     * @return the destination
     * @throws IllegalArgumentException for a malformed line
     */
    public static Destination parse(String line) {
        String[] f = line.strip().split(":");
        if (f.length != 8 || f[3].length() != 32) {
            throw new IllegalArgumentException("not a destination line: '" + line + "'");
        }
        try {
            QpEndpoint ep = new QpEndpoint(Integer.parseInt(f[1], 16), Integer.parseInt(f[2], 16),
                    Integer.parseInt(f[0], 16), Gid.of(HEX.parseHex(f[3])), Mtu.of(Integer.parseInt(f[4])));
            RemoteBuffer rb = new RemoteBuffer(Long.parseUnsignedLong(f[5], 16), Long.parseUnsignedLong(f[6], 16),
                    Integer.parseUnsignedInt(f[7], 16));
            return new Destination(ep, rb);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a destination line: '" + line + "'", e);
        }
    }
}
