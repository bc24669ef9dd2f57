package rdmaflux.samples.docs;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RdmaServer;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.metrics.RdmaDeviceMetrics;
import rdmaflux.metrics.RdmaMetrics;
import rdmaflux.metrics.RdmaObservations;
import reactor.util.context.Context;

/**
 * The examples of docs/metrics.md. Every method runs on the calling thread; {@code DocSnippetsIT} runs
 * the one that connects on real RDMA.
 */
public final class MetricsSnippets {
    private MetricsSnippets() {
    }

    /**
     * docs/metrics.md: meters for a server and a client, scraped once.
     *
     * @param address an IP address of an RDMA interface and a port (0 for any)
     * @return the Prometheus text of the registry while both connections were up
     */
    public static String turnOn(InetSocketAddress address) {
        // tag::turn-on[]
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.of(registry);   // registers every meter now
        RdmaDeviceMetrics devices = new RdmaDeviceMetrics();                     // devices, ports, resources
        devices.bindTo(registry);                                                // close() when done

        ConnectionOptions options = ConnectionOptions.builder().recorder(recorder).build();
        Duration timeout = Duration.ofSeconds(10);
        RdmaServer server = RdmaServer.bind(address, options, AcceptFilter.ACCEPT_ALL).block(timeout);
        RdmaConnection c = RdmaConnection.connect(server.address(), options).block(timeout);
        // end::turn-on[]
        String scrape = registry.scrape();
        c.disposeNow(timeout);
        server.disposeNow(timeout);
        devices.close();
        return scrape;
    }

    /**
     * docs/metrics.md: metrics by configuration, without naming a Micrometer type.
     *
     * @param options the options so far
     * @param metricsEnabled the application's setting
     * @return the options, recording to Micrometer's global registry when enabled
     * @throws IllegalStateException when enabled and Micrometer is not on the class path
     */
    public static ConnectionOptions byConfiguration(ConnectionOptions options, boolean metricsEnabled) {
        // tag::by-configuration[]
        if (metricsEnabled) {
            options = options.toBuilder().recorder(RdmaMetrics.globalRecorder()).build(); // Metrics.globalRegistry
        }
        // end::by-configuration[]
        return options;
    }

    /**
     * docs/metrics.md: the opt-in {@code remote} tag.
     *
     * @param registry where the meters go
     * @param base the options so far
     * @return options whose connections' meters carry their peer's address
     */
    public static ConnectionOptions remoteTag(MeterRegistry registry, ConnectionOptions base) {
        // tag::remote-tag[]
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder(registry).remoteAddressTag(16).build();
        ConnectionOptions options = base.toBuilder().recorder(recorder).build(); // per peer, client and server side
        // end::remote-tag[]
        return options;
    }

    /**
     * docs/metrics.md: other histogram buckets.
     *
     * @param registry where the meters go
     * @return a recorder whose latency and step timers have the application's buckets
     */
    public static MicrometerRdmaRecorder buckets(MeterRegistry registry) {
        // tag::buckets[]
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder(registry)
                .operationLatencyBuckets(Duration.ofNanos(10_000), Duration.ofNanos(50_000),
                        Duration.ofNanos(200_000), Duration.ofMillis(1), Duration.ofMillis(10))
                .connectStepBuckets(Duration.ofMillis(10), Duration.ofMillis(100), Duration.ofSeconds(1))
                .build();
        // end::buckets[]
        return recorder;
    }

    /**
     * docs/metrics.md: the recorder as a {@code MeterBinder}, after the registry's filters.
     *
     * @param registry the application's registry, with nothing of rdmaflux's registered yet
     * @return the recorder, bound to {@code registry}
     */
    public static MicrometerRdmaRecorder filtered(MeterRegistry registry) {
        // tag::filter[]
        registry.config()
                .meterFilter(MeterFilter.denyNameStartsWith("rdmaflux.multicast"))     // no multicast series
                .meterFilter(MeterFilter.renameTag("rdmaflux", "error", "exception")); // the house's tag name
        MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.builder().build();  // nothing registered yet
        recorder.bindTo(registry);                                                    // the filters apply
        // end::filter[]
        return recorder;
    }

    /**
     * docs/metrics.md: connects, accepts and an operation as observations, nested under the application's.
     * Binds a server, connects to it and sends one message; {@code DocSnippetsIT} runs it on real RDMA.
     *
     * @param observations where the observations go
     * @param meters where the meters go
     * @param address an IP address of an RDMA interface and a port (0 for any)
     */
    public static void observed(ObservationRegistry observations, MeterRegistry meters, InetSocketAddress address) {
        Duration timeout = Duration.ofSeconds(10);
        // tag::observations[]
        RdmaRecorder recorder = RdmaObservations.recorder(observations, MicrometerRdmaRecorder.of(meters));
        ConnectionOptions options = ConnectionOptions.builder().recorder(recorder).build();

        Observation serving = Observation.start("orders.server", observations);
        RdmaServer server = RdmaServer.bind(address, options, AcceptFilter.ACCEPT_ALL)
                .contextWrite(Context.of(RdmaObservations.PARENT_KEY, serving))   // its accepts: children
                .block(timeout);

        Observation request = Observation.start("orders.request", observations);
        RdmaConnection.connect(server.address(), options)                           // the connect: a child
                .flatMap(c -> c.send(ByteBuffer.wrap(new byte[] {42}))
                        .transform(RdmaObservations.operation(observations, "send", c)) // opt-in: a child
                        .doFinally(s -> c.dispose()))
                .contextWrite(Context.of(RdmaObservations.PARENT_KEY, request))
                .block(timeout);
        // end::observations[]
        request.stop();
        server.disposeNow(timeout);
        serving.stop();
    }
}
