package rdmaflux.cm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The addresses in received GRHs, parsed once per source and destination rather than once per datagram:
 * a multicast group's datagrams mostly come from one sender, and parsing makes two {@code InetAddress}es
 * and a {@link rdmaflux.verbs.Gid} each time. Only the address bytes are compared: the rest of the header
 * (an IPv4 header's length, identification and checksum) changes with every packet.
 *
 * <p>Thread: the completion loop of the {@link UdQueue} that owns it.
 */
final class GrhAddresses {
    /** The address bytes of the last header parsed: bytes 32..39 (IPv4) or 8..39 (GIDs). */
    private final byte[] key = new byte[Datagram.GRH_BYTES - 8];
    private int keyFrom = -1;
    private Datagram.Addresses last;

    /**
     * The addresses of the GRH at {@code offset} of {@code buffer}.
     *
     * @param buffer the receive buffer
     * @param offset where its GRH starts
     * @return the parsed addresses, the same object as last time when they did not change
     */
    Datagram.Addresses of(MemorySegment buffer, long offset) {
        int from = Datagram.isIpv4Grh(buffer, offset) ? 32 : 8;
        if (from == keyFrom && sameKey(buffer, offset, from)) {
            return last;
        }
        byte[] header = new byte[Datagram.GRH_BYTES];
        MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, offset, header, 0, Datagram.GRH_BYTES);
        last = Datagram.parseGrh(header);
        System.arraycopy(header, from, key, 0, Datagram.GRH_BYTES - from);
        keyFrom = from;
        return last;
    }

    private boolean sameKey(MemorySegment buffer, long offset, int from) {
        for (int i = 0; i < Datagram.GRH_BYTES - from; i++) {
            if (buffer.get(ValueLayout.JAVA_BYTE, offset + from + i) != key[i]) {
                return false;
            }
        }
        return true;
    }
}
