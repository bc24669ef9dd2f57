package rdmaflux.metrics.autoconfigure;

import java.net.InetSocketAddress;
import java.util.Objects;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.rsocket.RdmaClientTransport;

/**
 * Makes RSocket client transports over RDMA with the application's connection options (the
 * {@code rdmaflux.connection.*} properties on the transport's defaults, its loops and recorder), for
 * Spring's {@code RSocketRequester}:
 *
 * <pre>{@code
 * RSocketRequester requester = builder.transport(transports.create("10.0.0.2", 7000));
 * }</pre>
 *
 * <p>Immutable; any thread.
 */
public final class RdmaClientTransports {
    private final ConnectionOptions options;

    /**
     * A factory of transports.
     *
     * @param options the options of every connection its transports open
     */
    public RdmaClientTransports(ConnectionOptions options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    /** {@return the options of every connection the transports open} */
    public ConnectionOptions options() {
        return options;
    }

    /**
     * A transport to an RSocket server over RDMA.
     *
     * @param address the server's RDMA-capable IP address and port
     * @return the transport; each of its connections is a new RDMA connection
     */
    public RdmaClientTransport create(InetSocketAddress address) {
        return RdmaClientTransport.create(address, options);
    }

    /**
     * A transport to an RSocket server over RDMA.
     *
     * @param host the server's RDMA-capable IP address or host name
     * @param port the server's port
     * @return the transport; each of its connections is a new RDMA connection
     */
    public RdmaClientTransport create(String host, int port) {
        return create(new InetSocketAddress(host, port));
    }
}
