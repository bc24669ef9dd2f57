package rdmaflux.verbs;

/**
 * A failed rdma-core call: names the operation, the errno and its description.
 *
 * <p>Every native failure in rdmaflux surfaces as this type or one of its subclasses, chosen by the
 * errno so that callers can branch on the kind of failure rather than on message text:
 * {@link RdmaPermissionException} (EPERM, EACCES), {@link RdmaResourceException} (ENOMEM, ENOSPC,
 * EAGAIN, EMFILE; {@link RdmaMemlockException} when a registration hit the locked-memory limit), {@link RdmaNoDeviceException} (ENODEV, ENXIO, EADDRNOTAVAIL) and
 * {@link RdmaTimeoutException} (ETIMEDOUT). Errors that do not come from a system call (a failed work
 * completion, a rejected connection) have errno 0 and their own subclasses elsewhere.
 */
public class RdmaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The native function or logical step that failed. */
    private final String operation;
    /** The positive errno, or 0. */
    private final int errno;

    /**
     * Creates an exception for {@code operation} failing with {@code errno}.
     *
     * @param operation the native function or logical step that failed, e.g. {@code ibv_reg_mr}
     * @param errno the positive errno value, or 0 when the failure carries none
     * @param detail extra context, may be {@code null}
     */
    public RdmaException(String operation, int errno, String detail) {
        super(format(operation, errno, detail));
        this.operation = operation;
        this.errno = errno;
    }

    /**
     * Creates an exception with a message and cause but no errno.
     *
     * @param operation the step that failed
     * @param message what went wrong
     * @param cause the underlying failure, may be {@code null}
     */
    public RdmaException(String operation, String message, Throwable cause) {
        super(operation + ": " + message, cause);
        this.operation = operation;
        this.errno = 0;
    }

    /**
     * Builds the most specific exception type for an errno.
     *
     * @param operation the native function that failed
     * @param errno the positive errno value it reported
     * @param detail extra context, may be {@code null}
     * @return the exception, not thrown
     */
    public static RdmaException of(String operation, int errno, String detail) {
        return switch (errno) {
            case Errno.EPERM, Errno.EACCES -> new RdmaPermissionException(operation, errno, detail);
            case Errno.ENOMEM, Errno.ENOSPC, Errno.EAGAIN, Errno.EMFILE, Errno.ENFILE ->
                    new RdmaResourceException(operation, errno, detail);
            case Errno.ENODEV, Errno.ENXIO, Errno.EADDRNOTAVAIL -> new RdmaNoDeviceException(operation, errno, detail);
            case Errno.ETIMEDOUT -> new RdmaTimeoutException(operation, errno, detail);
            default -> new RdmaException(operation, errno, detail);
        };
    }

    /** {@return the native function or step that failed, e.g. {@code rdma_resolve_addr}} */
    public String operation() {
        return operation;
    }

    /** {@return the positive errno value, or 0 when the failure did not come with one} */
    public int errno() {
        return errno;
    }

    /** {@return the symbolic errno name such as {@code ENODEV}, or {@code null} when errno is 0} */
    public String errnoName() {
        return errno == 0 ? null : Errno.name(errno);
    }

    private static String format(String operation, int errno, String detail) {
        StringBuilder sb = new StringBuilder(operation).append(" failed");
        if (errno != 0) {
            sb.append(": ").append(Errno.name(errno)).append(" (").append(Errno.describe(errno)).append(')');
        }
        if (detail != null && !detail.isEmpty()) {
            sb.append(": ").append(detail);
        }
        return sb.toString();
    }
}
