/**
 * rdmaflux metrics: Micrometer meters and observations for rdmaflux connections, completions,
 * multicast and devices; and, in {@code rdmaflux.metrics.autoconfigure}, the Spring Boot
 * auto-configuration of rdmaflux, whose Spring, RSocket and Netty dependencies are optional.
 */
@SuppressWarnings("requires-transitive-automatic") // Reactor and Micrometer ship automatic modules
module rdmaflux.metrics {
    requires transitive rdmaflux.cm;
    requires transitive micrometer.core;
    requires transitive micrometer.observation;
    requires transitive micrometer.commons; // KeyValues and KeyName, in the observation convention's signatures

    // Spring Boot and RSocket: present only in applications that use the auto-configuration.
    requires static spring.core;
    requires static spring.beans;
    requires static spring.context;
    requires static spring.messaging;
    requires static spring.boot;
    requires static spring.boot.autoconfigure;
    requires static spring.boot.rsocket;
    requires static spring.boot.health;
    requires static rsocket.core;

    exports rdmaflux.metrics;
    exports rdmaflux.metrics.autoconfigure;
    // Spring calls the auto-configurations' package-private bean methods by reflection.
    opens rdmaflux.metrics.autoconfigure;
}
