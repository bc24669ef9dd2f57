package rdmaflux.cm;

import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.RdmaException;

/**
 * A connection failed at a step: the connection manager reported an error event, a step timed out,
 * or the peer went away. Catch a nested subclass to branch on the cause.
 */
public class RdmaCmException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** The step that failed. */
    private final Step step;
    /** The CM event that reported the failure, or null. */
    private final CmEventType event;
    /** The event's status. */
    private final int status;

    RdmaCmException(Step step, CmEventType event, int status, String message) {
        super("rdma_cm " + step.name().toLowerCase(java.util.Locale.ROOT), message, null);
        this.step = step;
        this.event = event;
        this.status = status;
    }

    /** {@return the step that failed} */
    public Step step() {
        return step;
    }

    /** {@return the CM event that reported the failure, or {@code null} (timeouts, local errors)} */
    public CmEventType event() {
        return event;
    }

    /** {@return the event's status: a negative errno, or the reject reason for {@link Rejected}} */
    public int status() {
        return status;
    }

    /**
     * Whether connecting again may succeed: the failure can be transient (the server is restarting, the
     * route or the peer's host is briefly gone), as opposed to a decision or a defect that a retry would
     * only repeat. {@link RdmaRetry#reconnect} retries exactly these.
     *
     * <p>Retryable: {@link AddressError}, {@link RouteError}, {@link ConnectError}, {@link Unreachable};
     * {@link Rejected} for {@link Rejected#INVALID_SERVICE_ID} (nobody listens yet),
     * {@link Rejected#TIMEOUT} and a full accept queue ({@link Rejected#isAcceptQueueFull()}); a {@link StepTimeout} of the address, route, connect or accept step.
     * {@link DeviceRemoved} is retryable too: a device added again, or another device serving the address, takes
     * the next attempt.
     * Not retryable: a rejection by the server's application ({@link Rejected#CONSUMER_REJECT}) or for
     * any other reason, and failures of an established connection
     * ({@link Disconnected}, {@link CompletionError}, {@link IllegalEvent}, {@link TimewaitExit}), and a
     * {@link ProtocolViolation}: the peer that broke the protocol would break it again.
     *
     * @return whether a new connect may succeed
     */
    public boolean isRetryable() {
        return switch (this) {
            case AddressError e -> true;
            case RouteError e -> true;
            case ConnectError e -> true;
            case Unreachable e -> true;
            case DeviceRemoved e -> true;
            case Rejected r -> r.reason() == Rejected.INVALID_SERVICE_ID || r.reason() == Rejected.TIMEOUT
                    || r.isAcceptQueueFull();
            case StepTimeout t -> t.step() != Step.DISCONNECT && t.step() != Step.TRANSFER;
            default -> false;
        };
    }

    /**
     * Maps an error event to its exception.
     *
     * @param step the step in progress
     * @param type the event
     * @param status its status
     * @param privateData the peer's private data (for rejections)
     * @return the exception
     */
    public static RdmaCmException of(Step step, CmEventType type, int status, byte[] privateData) {
        String s = " (status " + status + describe(status) + ")";
        return switch (type) {
            case ADDR_ERROR -> new AddressError(step, status, "address resolution failed" + s
                    + ": is the destination reachable through an RDMA device?");
            case ROUTE_ERROR -> new RouteError(step, status, "route resolution failed" + s);
            case CONNECT_ERROR -> new ConnectError(step, status, "connection error" + s);
            case UNREACHABLE -> new Unreachable(step, status, "peer unreachable" + s);
            case REJECTED -> new Rejected(step, status, privateData);
            case DEVICE_REMOVAL -> new DeviceRemoved(step, status);
            case DISCONNECTED -> new Disconnected(step, "the peer disconnected");
            case TIMEWAIT_EXIT -> new TimewaitExit(step);
            default -> new RdmaCmException(step, type, status, "unexpected " + type + s);
        };
    }

    private static String describe(int status) {
        return status < 0 ? ", " + rdmaflux.verbs.Errno.name(-status) : "";
    }

    /** ADDR_ERROR: the destination could not be resolved to a local RDMA device and port. */
    public static final class AddressError extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        AddressError(Step step, int status, String message) {
            super(step, CmEventType.ADDR_ERROR, status, message);
        }
    }

    /** ROUTE_ERROR: no path to the destination. */
    public static final class RouteError extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        RouteError(Step step, int status, String message) {
            super(step, CmEventType.ROUTE_ERROR, status, message);
        }
    }

    /** CONNECT_ERROR: the handshake failed. */
    public static final class ConnectError extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for a CONNECT_ERROR event.
         *
         * @param step the step it ended
         * @param status the event's status
         * @param message what failed
         */
        public ConnectError(Step step, int status, String message) {
            super(step, CmEventType.CONNECT_ERROR, status, message);
        }
    }

    /** UNREACHABLE: the peer did not answer the handshake. */
    public static final class Unreachable extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        Unreachable(Step step, int status, String message) {
            super(step, CmEventType.UNREACHABLE, status, message);
        }
    }

    /**
     * REJECTED: no listener on the port, the server's accept filter said no, its accept queue was full, or
     * it speaks another protocol ({@link #isProtocolMismatch()}).
     */
    public static final class Rejected extends RdmaCmException {
        private static final long serialVersionUID = 1L;
        /** IB CM reject reason: the server application rejected the request. */
        public static final int CONSUMER_REJECT = 28;
        /** IB CM reject reason: nobody listens on the service id (port). */
        public static final int INVALID_SERVICE_ID = 8;
        /** IB CM reject reason: the peer's CM timed out waiting for this side. */
        public static final int TIMEOUT = 1;

        /** {@link ServerOptions#ACCEPT_QUEUE_FULL} as the server sends it. */
        private static final byte[] QUEUE_FULL =
                ServerOptions.ACCEPT_QUEUE_FULL.getBytes(java.nio.charset.StandardCharsets.US_ASCII);

        /** The private data the server sent with the rejection. */
        private final byte[] privateData;

        /** {@link ServerOptions#HELLO_REFUSED} as the server sends it. */
        private static final byte[] HELLO_REFUSED =
                ServerOptions.HELLO_REFUSED.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        /** The most of the server's explanation quoted: the CM carries 148 bytes in a rejection. */
        private static final int MAX_EXPLANATION = 140;

        Rejected(Step step, int reason, byte[] privateData) {
            super(step, CmEventType.REJECTED, reason, "connection rejected (reason " + reason
                    + (reason == INVALID_SERVICE_ID ? ": no listener on that port"
                    : reason == CONSUMER_REJECT ? (queueFull(reason, privateData)
                    ? ": the server's accept queue is full"
                    : startsWith(reason, privateData, HELLO_REFUSED)
                    ? ": the server speaks the rdmaflux protocol and refused this request's private data as a hello: "
                            + explanation(privateData)
                    : ": rejected by the server") : "") + ")");
            this.privateData = privateData == null ? new byte[0] : privateData.clone();
        }

        /** {@return the CM reject reason ({@link #CONSUMER_REJECT}, {@link #INVALID_SERVICE_ID}, ...)} */
        public int reason() {
            return status();
        }

        /** {@return the private data the server sent with the rejection (may be padded by the CM)} */
        public byte[] privateData() {
            return privateData.clone();
        }

        /**
         * {@return whether an rdmaflux server refused the request because its accept queue was full: a
         * {@link #CONSUMER_REJECT} whose private data starts with {@link ServerOptions#ACCEPT_QUEUE_FULL}}
         */
        public boolean isAcceptQueueFull() {
            return queueFull(reason(), privateData);
        }

        /**
         * {@return whether an rdmaflux server refused the request because it carried no hello the server
         * speaks: a {@link #CONSUMER_REJECT} whose private data starts with {@link ServerOptions#HELLO_REFUSED}}
         * This side uses {@link ConnectionOptions.Protocol#RAW} against a server with the default
         * {@link ConnectionOptions.Protocol#CREDITS}, or is an rdmaflux of a hello version the server does
         * not know; the message quotes the server's explanation. Connecting again the same way fails again.
         */
        public boolean isProtocolMismatch() {
            return startsWith(reason(), privateData, HELLO_REFUSED);
        }

        private static boolean queueFull(int reason, byte[] data) {
            return startsWith(reason, data, QUEUE_FULL);
        }

        private static boolean startsWith(int reason, byte[] data, byte[] marker) {
            return reason == CONSUMER_REJECT && data != null && data.length >= marker.length
                    && java.util.Arrays.equals(data, 0, marker.length, marker, 0, marker.length);
        }

        /** The server's text after the marker, up to the CM's zero padding: printable ASCII only, as it is the peer's. */
        private static String explanation(byte[] data) {
            StringBuilder text = new StringBuilder();
            for (int i = HELLO_REFUSED.length; i < data.length && data[i] != 0 && text.length() < MAX_EXPLANATION; i++) {
                text.append(data[i] >= 0x20 && data[i] < 0x7F ? (char) data[i] : '?');
            }
            return text.toString().strip();
        }
    }

    /** DEVICE_REMOVAL: the RDMA device went away. */
    public static final class DeviceRemoved extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        DeviceRemoved(Step step, int status) {
            super(step, CmEventType.DEVICE_REMOVAL, status, "the RDMA device was removed");
        }
    }

    /** DISCONNECTED: the peer closed the connection (or crashed); pending operations fail with this. */
    public static final class Disconnected extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for a DISCONNECTED event that ended the connection.
         *
         * @param step the step it ended
         * @param message what happened
         */
        public Disconnected(Step step, String message) {
            super(step, CmEventType.DISCONNECTED, 0, message);
        }
    }

    /** TIMEWAIT_EXIT where none was expected. */
    public static final class TimewaitExit extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        TimewaitExit(Step step) {
            super(step, CmEventType.TIMEWAIT_EXIT, 0, "unexpected TIMEWAIT_EXIT");
        }
    }

    /** The port an established connection runs on went down ({@link ConnectionOptions.PortDownPolicy#FAIL}). */
    public static final class PortDown extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for the connection's port went down.
         *
         * @param device the device's name
         * @param port the port number
         */
        public PortDown(String device, int port) {
            super(Step.TRANSFER, null, 0, "port " + port + " of " + device + " went down (IBV_EVENT_PORT_ERR)");
        }
    }

    /** A step did not finish within its timeout. */
    public static final class StepTimeout extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for a step that did not end in time.
         *
         * @param step the step
         * @param timeout its timeout
         */
        public StepTimeout(Step step, java.time.Duration timeout) {
            super(step, null, 0, step + " did not complete within " + timeout);
        }
    }

    /** An event arrived that is not legal in the connection's state: a defect, reported, never ignored. */
    public static final class IllegalEvent extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for an event the state machine does not expect in its state.
         *
         * @param step the step it ended
         * @param event the event
         * @param state the state it arrived in
         */
        public IllegalEvent(Step step, CmEventType event, ConnectionState state) {
            super(step == null ? Step.TRANSFER : step, event, 0, "event " + event + " is not legal in state " + state);
        }
    }

    /** A work completion failed (the connection fails with it). */
    public static final class CompletionError extends RdmaCmException {
        private static final long serialVersionUID = 1L;
        /** The failed work completion's status. */
        private final rdmaflux.verbs.WcStatus wcStatus;

        /**
         * Makes the exception for a failed work completion.
         *
         * @param wcStatus the completion's status
         * @param message what failed
         */
        public CompletionError(rdmaflux.verbs.WcStatus wcStatus, String message) {
            super(Step.TRANSFER, null, wcStatus.value(), message);
            this.wcStatus = wcStatus;
        }

        /** {@return the work completion status} */
        public rdmaflux.verbs.WcStatus wcStatus() {
            return wcStatus;
        }
    }

    /**
     * The peer broke the rdmaflux protocol (docs/protocol.md): its hello (connect private data) is not a
     * valid one, it returned more credits than this side spent, sent a data message without a credit or
     * without immediate data, sent a malformed large-message descriptor, or claimed to have finished more
     * large messages than were sent. The connection fails with it; the peer's other connections and
     * everyone else's are not affected. The {@link #step()} is {@link Step#CONNECT} or {@link Step#ACCEPT}
     * for a bad hello, {@link Step#TRANSFER} for anything later.
     */
    public static final class ProtocolViolation extends RdmaCmException {
        private static final long serialVersionUID = 1L;

        /**
         * Makes the exception for the peer broke the wire protocol.
         *
         * @param step the step it ended
         * @param message what the peer did
         */
        public ProtocolViolation(Step step, String message) {
            super(step, null, 0, "protocol violation by the peer: " + message);
        }
    }
}
