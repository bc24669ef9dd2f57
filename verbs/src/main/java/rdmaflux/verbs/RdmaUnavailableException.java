package rdmaflux.verbs;

/**
 * RDMA cannot be used on this machine; {@link #reason()} says why and the message says how to fix it.
 */
public final class RdmaUnavailableException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** Why RDMA is unavailable, from the most to the least fundamental cause. */
    public enum Reason {
        /** libibverbs.so.1 or librdmacm.so.1 cannot be loaded. */
        LIBRARY_MISSING,
        /** The kernel has no RDMA core (no /sys/class/infiniband). */
        KERNEL_STACK_MISSING,
        /** The kernel has RDMA support but no device (or no user-space provider for it). */
        NO_DEVICE,
        /** /dev/infiniband/rdma_cm is missing: the rdma_ucm module is not loaded. */
        RDMA_CM_MISSING,
        /** The device files exist but this user may not open them. */
        PERMISSION_DENIED,
        /** RLIMIT_MEMLOCK is too low to register memory. */
        MEMLOCK_TOO_LOW
    }

    /** Why RDMA cannot be used. */
    private final Reason reason;

    /**
     * Creates the exception.
     *
     * @param reason the diagnosed cause
     * @param message what is wrong and how to fix it
     */
    public RdmaUnavailableException(Reason reason, String message) {
        super("rdma", message, null);
        this.reason = reason;
    }

    /** {@return the diagnosed cause} */
    public Reason reason() {
        return reason;
    }
}
