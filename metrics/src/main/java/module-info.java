/**
 * rdmaflux metrics: Micrometer meters and observations for rdmaflux connections, completions,
 * multicast and devices.
 */
@SuppressWarnings("requires-transitive-automatic") // Reactor and Micrometer ship automatic modules
module rdmaflux.metrics {
    requires transitive rdmaflux.cm;
    requires transitive micrometer.core;
    requires transitive micrometer.observation;

    exports rdmaflux.metrics;
}
