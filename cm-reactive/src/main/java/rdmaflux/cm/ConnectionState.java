package rdmaflux.cm;

/**
 * The state of a connection, as {@link RdmaConnection#states()} reports it.
 *
 * <p>Client: {@code IDLE → RESOLVING_ADDRESS → RESOLVING_ROUTE → CONNECTING → ESTABLISHED →
 * DISCONNECTING → CLOSED}; server: {@code IDLE → ACCEPTING → ESTABLISHED → ...}; any step may end in
 * {@link Failed}. {@link Closed} and {@link Failed} are final.
 */
public sealed interface ConnectionState {

    /** {@return the step this state belongs to, or {@code null} for IDLE and CLOSED} */
    Step step();

    /** {@return whether no further transition can happen} */
    default boolean isTerminal() {
        return this instanceof Closed || this instanceof Failed;
    }

    /** Created, nothing started. */
    record Idle() implements ConnectionState {
        @Override
        public Step step() {
            return null;
        }
    }

    /** Waiting for ADDR_RESOLVED. */
    record ResolvingAddress() implements ConnectionState {
        @Override
        public Step step() {
            return Step.ADDRESS;
        }
    }

    /** Waiting for ROUTE_RESOLVED. */
    record ResolvingRoute() implements ConnectionState {
        @Override
        public Step step() {
            return Step.ROUTE;
        }
    }

    /** rdma_connect sent, waiting for ESTABLISHED. */
    record Connecting() implements ConnectionState {
        @Override
        public Step step() {
            return Step.CONNECT;
        }
    }

    /** A connect request accepted, waiting for ESTABLISHED. */
    record Accepting() implements ConnectionState {
        @Override
        public Step step() {
            return Step.ACCEPT;
        }
    }

    /** Connected: data flows. */
    record Established() implements ConnectionState {
        @Override
        public Step step() {
            return Step.TRANSFER;
        }
    }

    /**
     * Disconnect in progress.
     *
     * @param remote whether the peer started it
     */
    record Disconnecting(boolean remote) implements ConnectionState {
        @Override
        public Step step() {
            return Step.DISCONNECT;
        }
    }

    /**
     * Closed in an orderly way (including a cancelled connect).
     *
     * @param remote whether the peer closed it
     */
    record Closed(boolean remote) implements ConnectionState {
        @Override
        public Step step() {
            return null;
        }
    }

    /**
     * Failed.
     *
     * @param cause the typed failure
     * @param step the step that failed
     */
    record Failed(Throwable cause, Step step) implements ConnectionState {
    }

    /** The idle state. */
    ConnectionState IDLE = new Idle();
    /** Resolving the address. */
    ConnectionState RESOLVING_ADDRESS = new ResolvingAddress();
    /** Resolving the route. */
    ConnectionState RESOLVING_ROUTE = new ResolvingRoute();
    /** Connecting. */
    ConnectionState CONNECTING = new Connecting();
    /** Accepting. */
    ConnectionState ACCEPTING = new Accepting();
    /** Established. */
    ConnectionState ESTABLISHED = new Established();
}
