/**
 * rdmaflux samples: the demo, rping/mckey-compatible tools, devinfo, the RC example and the
 * benchmark. Open, because picocli fills the options of every command by reflection.
 */
open module rdmaflux.samples {
    requires rdmaflux.metrics;
    requires info.picocli;
    requires rsocket.core;
    requires rsocket.transport.netty;
    requires io.netty.buffer;
    requires spring.messaging;
    requires spring.context;
    requires spring.core;
    requires spring.beans;
    requires spring.boot;
    requires spring.boot.autoconfigure;
    requires micrometer.registry.prometheus;
    requires context.propagation; // docs/api.md's context propagation example
    requires java.desktop;
    requires java.management;
    requires jdk.management;
    requires jdk.httpserver;
}
