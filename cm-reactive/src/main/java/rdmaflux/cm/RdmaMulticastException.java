package rdmaflux.cm;

import java.net.InetAddress;
import java.time.Duration;

import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.Errno;
import rdmaflux.verbs.RdmaException;

/**
 * Joining a multicast group failed, or a joined group failed later. Address resolution failures are
 * {@link RdmaCmException.AddressError}s instead, as for connections.
 */
public class RdmaMulticastException extends RdmaException {
    private static final long serialVersionUID = 1L;

    private final transient InetAddress group;
    /** The CM event that reported the failure, or null. */
    private final CmEventType event;
    /** The event's status. */
    private final int status;

    RdmaMulticastException(InetAddress group, CmEventType event, int status, String message) {
        super("rdma_join_multicast", message + " (group " + group.getHostAddress() + ")", null);
        this.group = group;
        this.event = event;
        this.status = status;
    }

    /** {@return the group} */
    public InetAddress group() {
        return group;
    }

    /** {@return the CM event that reported the failure, or {@code null} (timeouts)} */
    public CmEventType event() {
        return event;
    }

    /** {@return the event's status: a negative errno, or 0} */
    public int status() {
        return status;
    }

    /** MULTICAST_ERROR: the kernel could not join the group, or a joined group failed (e.g. the device went away). */
    public static final class JoinError extends RdmaMulticastException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for a MULTICAST_ERROR event.
         *
         * @param group the group
         * @param status the event's status
         * @param afterJoin whether the join had completed
         */
        public JoinError(InetAddress group, int status, boolean afterJoin) {
            super(group, CmEventType.MULTICAST_ERROR, status, (afterJoin ? "the joined group failed" : "join failed")
                    + " (MULTICAST_ERROR, status " + status + (status < 0 ? ", " + Errno.name(-status) : "") + ")");
        }
    }

    /** The join did not complete (address resolution plus MULTICAST_JOIN) within the join timeout. */
    public static final class JoinTimeout extends RdmaMulticastException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for a join that did not complete in time.
         *
         * @param group the group
         * @param timeout the join timeout
         */
        public JoinTimeout(InetAddress group, Duration timeout) {
            super(group, null, 0, "the join did not complete within " + timeout);
        }
    }
}
