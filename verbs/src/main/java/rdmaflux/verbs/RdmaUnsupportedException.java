package rdmaflux.verbs;

/**
 * The device or its provider library does not implement the operation (EOPNOTSUPP, errno 95): for
 * example XRC on Soft-RoCE, whose provider has no {@code open_xrcd}.
 */
public class RdmaUnsupportedException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation the native function that failed
     * @param detail extra context, may be {@code null}
     */
    public RdmaUnsupportedException(String operation, String detail) {
        super(operation, Errno.EOPNOTSUPP, detail);
    }
}
