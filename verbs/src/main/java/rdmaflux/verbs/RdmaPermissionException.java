package rdmaflux.verbs;

/** The caller lacks the right to the device or resource (EPERM, EACCES): check /dev/infiniband permissions and the memlock limit. */
public class RdmaPermissionException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation the native function that failed
     * @param errno the positive errno value
     * @param detail extra context, may be {@code null}
     */
    public RdmaPermissionException(String operation, int errno, String detail) {
        super(operation, errno, detail);
    }
}
