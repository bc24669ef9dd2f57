package rdmaflux.verbs;

/** A native operation timed out (ETIMEDOUT). */
public class RdmaTimeoutException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation the native function that failed
     * @param errno the positive errno value
     * @param detail extra context, may be {@code null}
     */
    public RdmaTimeoutException(String operation, int errno, String detail) {
        super(operation, errno, detail);
    }
}
