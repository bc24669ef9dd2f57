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
     * Binds.
     *
     * @param address an IP address of an RDMA interface (or the wildcard) and a port (0 picks one)
     * @param options options for every accepted connection
     * @param filter decides on each connect request
     * @return the bound server; fails with {@link rdmaflux.verbs.RdmaNoDeviceException} when no RDMA
     *         device has that address
     */
    static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter) {
        return Server.bind(address, options, filter);
    }

    /** {@return the bound address, with the port the system picked} */
    InetSocketAddress address();

    /** {@return established connections, in order; one subscriber; completes when the server is disposed} */
    Flux<RdmaConnection> connections();


    /** {@return completes when the server stopped listening} */
    Mono<Void> onDispose();
}
