package rdmaflux.cm;

import java.net.InetSocketAddress;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A listening RDMA endpoint: accepted, established connections arrive on {@link #connections()}.
 *
 * <p>{@link #dispose()} stops listening and refuses further requests; connections already accepted
 * stay open and are closed individually (they own their resources), so a server can be restarted or
 * drained without cutting live traffic.
 */
public interface RdmaServer extends RdmaDisposable {

    /**
     * Binds with default options and no filter.
     *
     * @param address an IP address of an RDMA interface (or the wildcard) and a port (0 picks one)
     * @return the bound server
     */
    static Mono<RdmaServer> bind(InetSocketAddress address) {
        return bind(address, ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL);
    }

    /**
     * Binds with the default {@link ServerOptions} (an accept queue of
     * {@value ServerOptions#DEFAULT_ACCEPT_QUEUE}).
     *
     * @param address an IP address of an RDMA interface (or the wildcard) and a port (0 picks one)
     * @param options options for every accepted connection
     * @param filter decides on each connect request ({@link AcceptFilter#async} for a {@code Mono})
     * @return the bound server; fails with {@link rdmaflux.verbs.RdmaNoDeviceException} when no RDMA
     *         device has that address
     */
    static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter) {
        return Implementation.bind(address, options, filter, ServerOptions.defaults());
    }

    /**
     * Binds with options of the server itself: the bound of its accept queue, beyond which connect
     * requests are rejected at once (see {@link ServerOptions}).
     *
     * @param address an IP address of an RDMA interface (or the wildcard) and a port (0 picks one)
     * @param options options for every accepted connection
     * @param filter decides on each connect request ({@link AcceptFilter#async} for a {@code Mono})
     * @param serverOptions the server's own options
     * @return the bound server; fails with {@link rdmaflux.verbs.RdmaNoDeviceException} when no RDMA
     *         device has that address
     */
    static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter,
                                 ServerOptions serverOptions) {
        return Implementation.bind(address, options, filter, serverOptions);
    }

    /** {@return the bound address, with the port the system picked} */
    InetSocketAddress address();

    /**
     * Established connections, in order; one subscriber; completes when the server is disposed, and fails with
     * {@link RdmaCmException.DeviceRemoved} when the server is bound to an address of a device that goes away
     * (it then stops listening; a server bound to the wildcard address is on no device and listens on). Each
     * connection holds a place in the accept queue ({@link ServerOptions#acceptQueue()}) until it is
     * delivered here, so the subscriber's demand paces the server: one that requests slowly makes the
     * server reject new connect requests once the queue is full. Connections still queued when the
     * subscriber cancels are closed.
     *
     * @return the accepted connections
     */
    Flux<RdmaConnection> connections();


    /** {@return completes when the server stopped listening} */
    Mono<Void> onDispose();
}
