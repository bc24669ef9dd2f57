package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.Datagram;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

import rdmaflux.verbs.Gid;

/**
 * The addresses in received GRHs, parsed once per source and destination rather than once per datagram:
 * a multicast group's datagrams mostly come from one sender, and parsing makes two {@code InetAddress}es
 * and a {@link rdmaflux.verbs.Gid} each time. Only the address bytes are compared: the rest of the header
 * (an IPv4 header's length, identification and checksum) changes with every packet.
 *
 * <p>Thread: the completion loop of the {@link UdQueue} that owns it.
 */
public final class GrhAddresses {
    /** The address bytes of the last header parsed: bytes 32..39 (IPv4) or 8..39 (GIDs). */
    private final byte[] key = new byte[Datagram.GRH_BYTES - 8];
    private int keyFrom = -1;
    private Addresses last;

    /**
     * The addresses of the GRH at {@code offset} of {@code buffer}.
     *
     * @param buffer the receive buffer
     * @param offset where its GRH starts
     * @return the parsed addresses, the same object as last time when they did not change
     */
    public Addresses of(MemorySegment buffer, long offset) {
        int from = isIpv4Grh(buffer, offset) ? 32 : 8;
        if (from == keyFrom && sameKey(buffer, offset, from)) {
            return last;
        }
        byte[] header = new byte[Datagram.GRH_BYTES];
        MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, offset, header, 0, Datagram.GRH_BYTES);
        last = parseGrh(header);
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

    /**
     * Copies a received datagram out of its receive buffer.
     *
     * @param buffer the receive buffers
     * @param at where this one starts, GRH first when {@code grh}
     * @param byteLength the completion's byte count (GRH included)
     * @param grh whether the completion says a GRH is present
     * @param addresses the queue's parsed source and destination addresses
     * @param owner returns the queue's credit once every subscriber saw the datagram; or {@code null}
     */
    public static Datagram fromReceive(MemorySegment buffer, long at, int byteLength, boolean grh, int sourceQpn,
                                boolean hasImmediate, int immediate, GrhAddresses addresses, Runnable owner) {
        int offset = grh ? Datagram.GRH_BYTES : 0;
        int length = Math.max(0, byteLength - offset);
        byte[] payload = new byte[length];
        MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, at + offset, payload, 0, length);
        Addresses a = grh ? addresses.of(buffer, at) : null;
        return a == null ? DatagramValues.datagram(payload, sourceQpn & 0xFFFFFF, null, null, null, hasImmediate, immediate, owner)
                : DatagramValues.datagram(payload, sourceQpn & 0xFFFFFF, a.sourceGid, a.source, a.destination, hasImmediate,
                        immediate, owner);
    }

    /** A GRH's source GID and addresses. */
    public record Addresses(Gid sourceGid, InetAddress source, InetAddress destination) {
    }

    /**
     * Reads the addresses from a 40-byte GRH as the device wrote it: RoCE v2 over IPv4 puts the IPv4
     * header in bytes 20..39 (the first 20 are zero); otherwise bytes 8..23 and 24..39 are the source and
     * destination GIDs of an IPv6/IB GRH.
     */
    public static Addresses parseGrh(byte[] h) {
        if (h.length != Datagram.GRH_BYTES) {
            throw new IllegalArgumentException("a GRH has 40 bytes, got " + h.length);
        }
        if (isIpv4Grh(MemorySegment.ofArray(h), 0)) {
            byte[] src = Arrays.copyOfRange(h, 32, 36);
            byte[] dst = Arrays.copyOfRange(h, 36, 40);
            byte[] mapped = new byte[16];
            mapped[10] = (byte) 0xFF;
            mapped[11] = (byte) 0xFF;
            System.arraycopy(src, 0, mapped, 12, 4);
            return new Addresses(Gid.of(mapped), inet(src), inet(dst));
        }
        Gid sgid = Gid.of(Arrays.copyOfRange(h, 8, 24));
        Gid dgid = Gid.of(Arrays.copyOfRange(h, 24, 40));
        return new Addresses(sgid, sgid.toInetAddress(), dgid.toInetAddress());
    }

    /** {@return whether the GRH at {@code offset} carries an IPv4 header (RoCE v2 over IPv4): 20 zero bytes, then version 4} */
    public static boolean isIpv4Grh(MemorySegment buffer, long offset) {
        for (int i = 0; i < 20; i++) {
            if (buffer.get(ValueLayout.JAVA_BYTE, offset + i) != 0) {
                return false;
            }
        }
        return (buffer.get(ValueLayout.JAVA_BYTE, offset + 20) & 0xF0) == 0x40;
    }

    private static InetAddress inet(byte[] raw) {
        try {
            return InetAddress.getByAddress(raw);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
