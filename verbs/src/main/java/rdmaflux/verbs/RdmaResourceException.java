package rdmaflux.verbs;

/** The kernel or device ran out of a resource (ENOMEM, ENOSPC, EAGAIN, EMFILE, ENFILE): often the memlock limit (ulimit -l) or queue sizes beyond the device's maximum. */
public class RdmaResourceException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation the native function that failed
     * @param errno the positive errno value
     * @param detail extra context, may be {@code null}
     */
    public RdmaResourceException(String operation, int errno, String detail) {
        super(operation, errno, detail);
    }
}
