package rdmaflux.metrics;

import java.net.InetAddress;
import java.net.InetSocketAddress;

import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;

/**
 * The names and keys of {@link RdmaObservationDocumentation}, one instance per kind of observation:
 * {@link #CONNECT} ({@code rdmaflux.connect}), {@link #ACCEPT} ({@code rdmaflux.accept}) and
 * {@link #OPERATION} ({@code rdmaflux.operation}); low cardinality {@code outcome} and {@code error} (and
 * {@code op} for operations), high cardinality {@code remote} (the peer's address and port). The keys and
 * values are those of the meters ({@link RdmaTags}); the peer is high cardinality here because a trace may
 * carry it, while the meters carry it only when asked to, and capped.
 *
 * <p>Threads: any; immutable.
 */
public class DefaultRdmaObservationConvention implements RdmaObservationConvention {
    /** The convention of client connects. */
    public static final DefaultRdmaObservationConvention CONNECT =
            new DefaultRdmaObservationConvention(RdmaObservationDocumentation.CONNECT.getName());
    /** The convention of server accepts. */
    public static final DefaultRdmaObservationConvention ACCEPT =
            new DefaultRdmaObservationConvention(RdmaObservationDocumentation.ACCEPT.getName());
    /** The convention of operations. */
    public static final DefaultRdmaObservationConvention OPERATION =
            new DefaultRdmaObservationConvention(RdmaObservationDocumentation.OPERATION.getName());

    private final String name;

    /**
     * A convention with the default keys under another name (for subclasses that change one part).
     *
     * @param name the observation's name
     */
    public DefaultRdmaObservationConvention(String name) {
        this.name = java.util.Objects.requireNonNull(name, "name");
    }

    /**
     * {@return the default convention of a kind of observation}
     *
     * @param kind what is observed
     */
    public static DefaultRdmaObservationConvention of(RdmaObservationContext.Kind kind) {
        return switch (kind) {
            case CONNECT -> CONNECT;
            case ACCEPT -> ACCEPT;
            case OPERATION -> OPERATION;
        };
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public String getContextualName(RdmaObservationContext context) {
        return switch (context.kind()) {
            case CONNECT -> "rdma connect";
            case ACCEPT -> "rdma accept";
            case OPERATION -> "rdma " + context.operation();
        };
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(RdmaObservationContext context) {
        String outcome = context.outcome();
        // While it runs nothing is known yet; the keys are added when it stops, which is when handlers read them.
        KeyValues keys = outcome == null ? KeyValues.empty() : KeyValues.of(
                RdmaObservationDocumentation.LowCardinalityKeys.OUTCOME.withValue(outcome),
                RdmaObservationDocumentation.LowCardinalityKeys.ERROR.withValue(errorOf(context)));
        if (context.kind() == RdmaObservationContext.Kind.OPERATION) {
            keys = keys.and(RdmaObservationDocumentation.LowCardinalityKeys.OP.withValue(context.operation()));
        }
        return keys;
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(RdmaObservationContext context) {
        return KeyValues.of(RdmaObservationDocumentation.HighCardinalityKeys.REMOTE.withValue(remoteOf(context.remote())));
    }

    /** The failure's exception simple name, as the meters' {@code error} tag and Micrometer's handlers say it. */
    static String errorOf(Observation.Context context) {
        Throwable e = context.getError();
        return e == null ? RdmaTags.NONE : e.getClass().getSimpleName();
    }

    /** {@code address:port}, without a host name lookup; {@code unknown} when not known. */
    static String remoteOf(InetSocketAddress remote) {
        if (remote == null) {
            return RdmaTags.UNKNOWN;
        }
        InetAddress a = remote.getAddress();
        return (a != null ? a.getHostAddress() : remote.getHostString()) + ":" + remote.getPort();
    }

}
