package rdmaflux.metrics;

import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import reactor.core.publisher.Mono;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;

/**
 * Micrometer Observation around establishing a connection: one {@code rdmaflux.connect} observation
 * per attempt, from subscription to established, failed or cancelled, so tracing and the observation
 * handlers (e.g. {@code DefaultMeterObservationHandler}, which makes it a timer) see each connect.
 *
 * <p>Key values: low cardinality {@code outcome} ({@code success}, {@code failure}, {@code cancelled})
 * and {@code error} (the exception's simple name, {@code none} on success); high cardinality
 * {@code remote} (the address connected to). Server-side accepts have no hook yet: cm-reactive does
 * not publish when a connect request arrives (see docs/metrics.md).
 */
public final class RdmaObservations {
    /** The observation's name. */
    public static final String CONNECT = "rdmaflux.connect";

    private RdmaObservations() {
    }

    /**
     * {@link RdmaConnection#connect(InetSocketAddress, ConnectionOptions)}, observed.
     *
     * @param registry where the observation goes; {@link ObservationRegistry#NOOP} observes nothing
     * @param remote the server's address
     * @param options the connection's options
     * @return the connection, as {@code RdmaConnection.connect} returns it
     */
    public static Mono<RdmaConnection> connect(ObservationRegistry registry, InetSocketAddress remote,
                                               ConnectionOptions options) {
        return observe(registry, remote, Mono.defer(() -> RdmaConnection.connect(remote, options)));
    }

    /** Observes {@code source}, a connect to {@code remote}, once per subscription. */
    static Mono<RdmaConnection> observe(ObservationRegistry registry, InetSocketAddress remote,
                                        Mono<RdmaConnection> source) {
        return Mono.defer(() -> {
            Observation o = Observation.createNotStarted(CONNECT, registry)
                    .contextualName("rdma connect")
                    .highCardinalityKeyValue("remote", String.valueOf(remote))
                    .start();
            AtomicBoolean done = new AtomicBoolean();
            return source
                    .doOnSuccess(c -> {
                        if (done.compareAndSet(false, true)) {
                            o.lowCardinalityKeyValue("outcome", "success").lowCardinalityKeyValue("error", "none");
                            o.stop();
                        }
                    })
                    .doOnError(e -> {
                        if (done.compareAndSet(false, true)) {
                            o.lowCardinalityKeyValue("outcome", "failure")
                                    .lowCardinalityKeyValue("error", e.getClass().getSimpleName());
                            o.error(e);
                            o.stop();
                        }
                    })
                    .doOnCancel(() -> {
                        if (done.compareAndSet(false, true)) {
                            o.lowCardinalityKeyValue("outcome", "cancelled").lowCardinalityKeyValue("error", "none");
                            o.stop();
                        }
                    });
        });
    }
}
