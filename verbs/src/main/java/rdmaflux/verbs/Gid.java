package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A 128-bit global identifier (port address). For RoCE it is an IPv6 address, or an IPv4-mapped one.
 */
public final class Gid {
    /** The all-zero GID, which marks an unused table entry. */
    public static final Gid ZERO = new Gid(new byte[16]);

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /**
     * Makes a GID from its bytes.
     *
     * @param raw 16 bytes in network order
     * @return the GID
     */
    public static Gid of(byte[] raw) {
        if (raw.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, got " + raw.length);
        }
        return new Gid(raw.clone());
    }

    static Gid read(MemorySegment seg, long offset) {
        return new Gid(seg.asSlice(offset, 16).toArray(ValueLayout.JAVA_BYTE));
    }

    void write(MemorySegment seg, long offset) {
        MemorySegment.copy(raw, 0, seg, ValueLayout.JAVA_BYTE, offset, 16);
    }

    /** {@return a copy of the 16 bytes} */
    public byte[] toBytes() {
        return raw.clone();
    }

    /** {@return whether this is the zero GID} */
    public boolean isZero() {
        return Arrays.equals(raw, ZERO.raw);
    }

    /** {@return the GID as an IPv6 address (IPv4-mapped GIDs come back as {@link java.net.Inet4Address})} */
    public InetAddress toInetAddress() {
        try {
            return InetAddress.getByAddress(raw);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }

    /** {@return colon-separated hex groups, as ibv_devinfo prints GIDs} */
    @Override
    public String toString() {
        String hex = HexFormat.of().formatHex(raw);
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 32; i += 4) {
            if (i > 0) {
                sb.append(':');
            }
            sb.append(hex, i, i + 4);
        }
        return sb.toString();
    }
}
