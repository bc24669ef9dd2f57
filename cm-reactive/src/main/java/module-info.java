/**
 * rdmaflux cm: the Reactor API over the RDMA connection manager ({@code RdmaConnection},
 * {@code RdmaServer}, multicast and datagram endpoints), and an RSocket transport over it
 * ({@code rdmaflux.cm.rsocket}, with rsocket-core as an optional dependency).
 *
 * <p>The verbs types that appear in this module's API ({@code RemoteBuffer}, {@code AccessFlags},
 * ...) and Reactor's {@code Mono}/{@code Flux} are re-exported through {@code requires transitive}.
 */
@SuppressWarnings("requires-transitive-automatic") // Reactor and Micrometer ship automatic modules
module rdmaflux.cm {
    requires transitive rdmaflux.verbs;
    requires transitive reactor.core;
    requires transitive org.reactivestreams;

    // The RSocket transport's dependencies are optional: present at run time only for applications that use it.
    requires static rsocket.core;
    requires static io.netty.buffer;
    requires static io.netty.common;
    // Optional too: BlockHound, for applications that install it to find blocking calls on the loops.
    requires static reactor.blockhound;

    exports rdmaflux.cm;
    exports rdmaflux.cm.rsocket;

    provides reactor.blockhound.integration.BlockHoundIntegration
            with rdmaflux.cm.internal.LoopsBlockHoundIntegration;
}
