package rdmaflux.samples.pingpong;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import rdmaflux.verbs.Gid;

/**
 * One QP's address in the text form of libibverbs' pingpong examples: {@code LID:QPN:PSN:GID} as
 * {@code "%04x:%06x:%06x:%s"}, the GID as 32 hex digits of its bytes in order, sent as a fixed
 * 52-byte record with its terminating NUL ({@code sizeof "0000:000000:000000:" + 32 hex}), exactly
 * what {@code gid_to_wire_gid} and {@code sprintf} produce in {@code rc_pingpong.c}.
 *
 * @param lid the port's LID (0 on RoCE)
 * @param qpn the QP number (24 bits)
 * @param psn the initial packet sequence number (24 bits)
 * @param gid the GID, {@link Gid#ZERO} when the C side was started without {@code -g}
 */
public record WireDestination(int lid, int qpn, int psn, Gid gid) {
    /** Bytes of one record on the wire, the NUL included. */
    public static final int SIZE = "0000:000000:000000:".length() + 32 + 1;

    private static final HexFormat HEX = HexFormat.of();

    /** {@return the 52 bytes to write} */
    public byte[] toWire() {
        String text = String.format("%04x:%06x:%06x:%s", lid & 0xffff, qpn & 0xffffff, psn & 0xffffff,
                HEX.formatHex(gid.toBytes()));
        byte[] out = new byte[SIZE];
        byte[] ascii = text.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(ascii, 0, out, 0, Math.min(ascii.length, SIZE - 1));
        return out;
    }

    /**
     * Reads a record as {@code sscanf(msg, "%x:%x:%x:%s")} and {@code wire_gid_to_gid} do.
     *
     * @param record the bytes read, NUL-terminated or not
     * @return the destination
     * @throws IllegalArgumentException when the record is not of that form
     */
    public static WireDestination parse(byte[] record) {
        int end = 0;
        while (end < record.length && record[end] != 0) {
            end++;
        }
        String text = new String(record, 0, end, StandardCharsets.US_ASCII);
        String[] parts = text.split(":");
        if (parts.length != 4 || parts[3].length() != 32) {
            throw new IllegalArgumentException("not a pingpong address (LID:QPN:PSN:GID): \"" + text + "\"");
        }
        try {
            return new WireDestination(Integer.parseInt(parts[0], 16), Integer.parseInt(parts[1], 16),
                    Integer.parseInt(parts[2], 16), Gid.of(HEX.parseHex(parts[3])));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a pingpong address (LID:QPN:PSN:GID): \"" + text + "\"", e);
        }
    }
}
