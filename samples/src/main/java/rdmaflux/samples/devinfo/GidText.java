package rdmaflux.samples.devinfo;

import rdmaflux.verbs.Gid;

/**
 * Formats a GID the way {@code ibv_devinfo} does: as IPv6 text in the RFC 5952 form glibc's
 * {@code inet_ntop} produces (longest zero run as {@code ::}, IPv4-mapped addresses as
 * {@code ::ffff:192.0.2.1}). {@link Gid#toString()} keeps all eight groups, which is unambiguous but
 * not what operators compare against.
 */
public final class GidText {
    private GidText() {
    }

    /**
     * Formats a GID the way {@code ibv_devinfo -v} does.
     *
     * @param gid the GID
     * @return e.g. {@code fe80::f086:ddff:fedb:e077} or {@code ::ffff:192.0.2.1}
     */
    public static String of(Gid gid) {
        return of(gid.toBytes());
    }

    /**
     * Formats 16 GID bytes the way {@code ibv_devinfo -v} does.
     *
     * @param raw 16 bytes in network order
     * @return the text form
     */
    public static String of(byte[] raw) {
        if (raw.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, got " + raw.length);
        }
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = (raw[2 * i] & 0xff) << 8 | (raw[2 * i + 1] & 0xff);
        }
        // glibc prints ::ffff:a.b.c.d for IPv4-mapped and ::a.b.c.d for the deprecated IPv4-compatible form.
        boolean firstFiveZero = groups[0] == 0 && groups[1] == 0 && groups[2] == 0 && groups[3] == 0
                && groups[4] == 0;
        if (firstFiveZero && groups[5] == 0xffff) {
            return "::ffff:" + dotted(raw);
        }
        if (firstFiveZero && groups[5] == 0 && (groups[6] != 0 || groups[7] > 1)) {
            return "::" + dotted(raw);
        }
        int bestStart = -1;
        int bestLen = 0;
        for (int i = 0; i < 8; ) {
            if (groups[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        if (bestLen < 2) {
            bestStart = -1; // RFC 5952: a single zero group is not shortened
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.toString();
    }

    private static String dotted(byte[] raw) {
        return (raw[12] & 0xff) + "." + (raw[13] & 0xff) + "." + (raw[14] & 0xff) + "." + (raw[15] & 0xff);
    }
}
