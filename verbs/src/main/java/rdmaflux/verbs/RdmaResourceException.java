package rdmaflux.verbs;

/**
 * The kernel or device ran out of a resource (ENOMEM, ENOSPC, EAGAIN, EMFILE, ENFILE): queue sizes beyond the
 * device's maximum, too many objects, or memory. A registration refused by the locked-memory limit
 * ({@code ulimit -l}) is the subclass {@link RdmaMemlockException}, which names the limit and the fix.
 */
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
