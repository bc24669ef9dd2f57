package rdmaflux.metrics;

import java.net.InetSocketAddress;
import java.util.Objects;

import io.micrometer.observation.Observation;

/**
 * What an rdmaflux observation knows: which kind it is (a connect, an accept, an operation), the peer,
 * the operation's name, and how it ended. The {@link RdmaObservationConvention} turns it into the
 * observation's name and key values.
 *
 * <p>Threads: made where the observation starts; {@link #outcome} is set once, where it stops (a CM loop,
 * a completion loop or the options' scheduler), before {@code stop()}, which publishes it to the handlers.
 */
public final class RdmaObservationContext extends Observation.Context {
    /** What is observed. */
    public enum Kind {
        /** A client's connect, from subscription to established, failed or cancelled. */
        CONNECT,
        /** A server's accept of a connect request, to established, failed or cancelled. */
        ACCEPT,
        /** One operation on a connection (opt-in), from subscription to completion. */
        OPERATION
    }

    private final Kind kind;
    private final InetSocketAddress remote;
    private final String operation;
    private volatile String outcome;

    /**
     * A context.
     *
     * @param kind what is observed
     * @param remote the peer's address, or {@code null} when not known
     * @param operation the operation's name ({@code send}, {@code write}, ...) for {@link Kind#OPERATION},
     *                  else {@code null}
     */
    public RdmaObservationContext(Kind kind, InetSocketAddress remote, String operation) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.remote = remote;
        if (kind == Kind.OPERATION && operation == null) {
            throw new IllegalArgumentException("an OPERATION context needs the operation's name (send, write, read, ...)");
        }
        this.operation = operation;
    }

    /** {@return what is observed} */
    public Kind kind() {
        return kind;
    }

    /** {@return the peer's address, or {@code null} when not known} */
    public InetSocketAddress remote() {
        return remote;
    }

    /** {@return the operation's name for {@link Kind#OPERATION}, else {@code null}} */
    public String operation() {
        return operation;
    }

    /**
     * {@return how it ended: {@link RdmaTags#SUCCESS}, {@link RdmaTags#FAILURE}, {@link RdmaTags#CANCELLED};
     * {@code null} while it runs}
     */
    public String outcome() {
        return outcome;
    }

    /**
     * Says how it ended; called once, before the observation stops.
     *
     * @param outcome {@link RdmaTags#SUCCESS}, {@link RdmaTags#FAILURE} or {@link RdmaTags#CANCELLED}
     */
    void outcome(String outcome) {
        this.outcome = outcome;
    }
}
