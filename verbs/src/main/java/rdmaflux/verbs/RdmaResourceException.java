package rdmaflux.verbs;

/**
 * The kernel or device ran out of a resource (ENOMEM, ENOSPC, EAGAIN, EMFILE, ENFILE): queue sizes beyond the
 * device's maximum, too many objects, or memory. A registration refused by the locked-memory limit
 * ({@code ulimit -l}) is the subclass {@link RdmaMemlockException}, which names the limit and the fix.
 *
 * <p>When a queue pair, CQ, memory region, protection domain or shared receive queue is refused, the message names
 * the limit that refused it and what to do: the rdma cgroup's {@code hca_object} limit in {@code rdma.max} (EAGAIN,
 * with the cgroup and its count), a size beyond the device's {@code max_cqe}, {@code max_qp_wr} or {@code max_sge}
 * (then the errno is the device's EINVAL), or the device's table of such objects ({@code max_qp}, {@code max_cq},
 * {@code max_mr}, ...) with its size.
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
