package rdmaflux.metrics.autoconfigure;

import java.util.List;
import java.util.Objects;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaRecorder;

/**
 * Builds the application's connection options from base options: the {@code rdmaflux.connection.*}
 * properties that are set, the context's {@link RdmaLoops} (if RDMA is usable) and {@link RdmaRecorder}, then every
 * {@link ConnectionOptionsCustomizer} in order. The auto-configuration's {@code ConnectionOptions} bean is
 * {@code create(ConnectionOptions.defaults())}; the RSocket transports start from their own defaults.
 *
 * <p>Immutable; any thread.
 */
public final class ConnectionOptionsFactory {
    private final ConnectionProperties properties;
    private final RdmaLoops loops;
    private final RdmaRecorder recorder;
    private final List<ConnectionOptionsCustomizer> customizers;

    /**
     * A factory.
     *
     * @param properties the connection properties
     * @param loops the loops every connection runs on, or {@code null} for {@link RdmaLoops#shared()}
     * @param recorder the recorder every connection reports to
     * @param customizers applied last, in order
     */
    public ConnectionOptionsFactory(ConnectionProperties properties, RdmaLoops loops, RdmaRecorder recorder,
            List<ConnectionOptionsCustomizer> customizers) {
        this.properties = Objects.requireNonNull(properties, "properties");
        this.loops = loops;
        this.recorder = Objects.requireNonNull(recorder, "recorder");
        this.customizers = List.copyOf(customizers);
    }

    /**
     * Options from {@code base} with the application's configuration applied.
     *
     * @param base what the properties that are not set keep
     * @return the options
     * @throws IllegalArgumentException when a property is out of its option's range (the message names it)
     */
    public ConnectionOptions create(ConnectionOptions base) {
        ConnectionOptions.Builder b = properties.applyTo(base.toBuilder()).loops(loops).recorder(recorder);
        for (ConnectionOptionsCustomizer c : customizers) {
            c.customize(b);
        }
        return b.build();
    }
}
