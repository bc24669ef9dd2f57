/**
 * rdmaflux cm: the Reactor API over the RDMA connection manager ({@code RdmaConnection},
 * {@code RdmaServer}, multicast and datagram endpoints).
 *
 * <p>The verbs types that appear in this module's API ({@code RemoteBuffer}, {@code AccessFlags},
 * ...) and Reactor's {@code Mono}/{@code Flux} are re-exported through {@code requires transitive}.
 */
@SuppressWarnings("requires-transitive-automatic") // Reactor and Micrometer ship automatic modules
module rdmaflux.cm {
    requires transitive rdmaflux.verbs;
    requires transitive reactor.core;
    requires transitive org.reactivestreams;

    exports rdmaflux.cm;
}
