package rdmaflux.verbs;

import java.util.Locale;

/**
 * A memory registration pinned more than the process's locked-memory limit ({@code RLIMIT_MEMLOCK}) allows,
 * and the process lacks {@code CAP_IPC_LOCK}, which would lift it: the kernel refused with ENOMEM (or EAGAIN).
 *
 * <p>The message names the limit (soft and hard), what was pinned already and what the registration needed,
 * and how to raise it: {@code ulimit -l}, {@code memlock} in {@code /etc/security/limits.conf},
 * {@code LimitMEMLOCK=} for a systemd service, a container's memlock ulimit or {@code IPC_LOCK} capability.
 * Only the registration that hit the limit fails: regions registered before stay, so the connections using
 * them keep working.
 */
public final class RdmaMemlockException extends RdmaResourceException {
    private static final long serialVersionUID = 1L;

    /** The soft limit in bytes, which the kernel checks. */
    private final long softLimit;
    /** The hard limit in bytes, or -1 for unlimited. */
    private final long hardLimit;
    /** Bytes this process had pinned before the registration, or -1 when unknown. */
    private final long pinnedBytes;
    /** Bytes the refused registration would have pinned. */
    private final long requestedBytes;

    /**
     * Creates the exception.
     *
     * @param operation the native function that failed, e.g. {@code ibv_reg_mr}
     * @param errno ENOMEM or EAGAIN, as the kernel reported it
     * @param requestedBytes bytes the registration would have pinned
     * @param softLimit the soft {@code RLIMIT_MEMLOCK} in bytes
     * @param hardLimit the hard {@code RLIMIT_MEMLOCK} in bytes, or -1 for unlimited
     * @param pinnedBytes bytes pinned before the registration, or -1 when unknown
     */
    public RdmaMemlockException(String operation, int errno, long requestedBytes, long softLimit, long hardLimit,
                                long pinnedBytes) {
        super(operation, errno, explain(requestedBytes, softLimit, hardLimit, pinnedBytes));
        this.softLimit = softLimit;
        this.hardLimit = hardLimit;
        this.pinnedBytes = pinnedBytes;
        this.requestedBytes = requestedBytes;
    }

    /** {@return the soft {@code RLIMIT_MEMLOCK} in bytes: what the kernel compares the pinned memory with} */
    public long softLimit() {
        return softLimit;
    }

    /** {@return the hard {@code RLIMIT_MEMLOCK} in bytes, or -1 for unlimited: how far {@code ulimit -l} may raise the soft one} */
    public long hardLimit() {
        return hardLimit;
    }

    /** {@return the bytes this process had pinned before the refused registration, or -1 when unknown} */
    public long pinnedBytes() {
        return pinnedBytes;
    }

    /** {@return the bytes the refused registration would have pinned} */
    public long requestedBytes() {
        return requestedBytes;
    }

    private static String explain(long requested, long soft, long hard, long pinned) {
        String already = pinned >= 0 ? "; " + size(pinned) + " pinned already" : "";
        String raise = hard < 0 || hard > soft
                ? "ulimit -l unlimited (or a size in KiB; up to the hard limit needs no privilege)"
                : "ulimit -l unlimited (or a size in KiB; beyond the hard limit, as root)";
        return "registering " + size(requested) + " would pin more than the locked-memory limit RLIMIT_MEMLOCK allows "
                + "(soft " + size(soft) + ", hard " + (hard < 0 ? "unlimited" : size(hard)) + already
                + "), and the process lacks CAP_IPC_LOCK. Raise the limit of the process that starts the JVM: "
                + raise + " in its shell, 'memlock' in /etc/security/limits.conf for login sessions, "
                + "LimitMEMLOCK=infinity in its systemd unit, or for a container --ulimit memlock=-1:-1 or "
                + "--cap-add IPC_LOCK (Kubernetes: the IPC_LOCK capability); or register less memory at a time";
    }

    /** Bytes with a binary unit, exact in bytes too: a limit is often set in KiB and read back in bytes. */
    static String size(long bytes) {
        if (bytes < 1024) {
            return bytes + " bytes";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        String scaled = v == Math.rint(v) ? String.format(Locale.ROOT, "%d %s", (long) v, units[u])
                : String.format(Locale.ROOT, "%.1f %s", v, units[u]);
        return scaled + " (" + bytes + " bytes)";
    }
}
