package rdmaflux.verbs;

/** No RDMA device serves the request (ENODEV, ENXIO, EADDRNOTAVAIL): the address is not on an RDMA-capable interface or the device list is empty. */
public class RdmaNoDeviceException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation the native function that failed
     * @param errno the positive errno value
     * @param detail extra context, may be {@code null}
     */
    public RdmaNoDeviceException(String operation, int errno, String detail) {
        super(operation, errno, detail);
    }
}
