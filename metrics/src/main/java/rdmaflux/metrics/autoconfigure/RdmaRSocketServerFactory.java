package rdmaflux.metrics.autoconfigure;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import io.rsocket.SocketAcceptor;
import org.springframework.boot.rsocket.server.RSocketServer;
import org.springframework.boot.rsocket.server.RSocketServerCustomizer;
import org.springframework.boot.rsocket.server.RSocketServerException;
import org.springframework.boot.rsocket.server.RSocketServerFactory;

import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;

/**
 * Spring Boot's {@link RSocketServerFactory} over RDMA: its servers bind an {@link RdmaServerTransport},
 * after Spring Boot's {@link RSocketServerCustomizer}s have had the RSocket server.
 *
 * <p>Immutable; any thread. The servers it makes are started and stopped by the context's thread.
 */
public final class RdmaRSocketServerFactory implements RSocketServerFactory {
    private final InetSocketAddress address;
    private final ConnectionOptions options;
    private final AcceptFilter filter;
    private final List<RSocketServerCustomizer> customizers;
    private final Duration timeout;

    /**
     * A factory.
     *
     * @param address the RDMA-capable IP address (or the wildcard) and port to listen on
     * @param options the options of every accepted connection
     * @param filter decides which connect requests are accepted
     * @param customizers applied to each RSocket server, in order
     * @param timeout how long starting and stopping may take
     */
    public RdmaRSocketServerFactory(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter,
            List<RSocketServerCustomizer> customizers, Duration timeout) {
        this.address = Objects.requireNonNull(address, "address");
        this.options = Objects.requireNonNull(options, "options");
        this.filter = Objects.requireNonNull(filter, "filter");
        this.customizers = List.copyOf(customizers);
        this.timeout = Objects.requireNonNull(timeout, "timeout");
    }

    @Override
    public RSocketServer create(SocketAcceptor acceptor) {
        return new Server(Objects.requireNonNull(acceptor, "acceptor"));
    }

    /** One RSocket server over RDMA; started and stopped by the context's thread, address read by any. */
    private final class Server implements RSocketServer {
        private final SocketAcceptor acceptor;
        private volatile RdmaCloseableServer bound;

        Server(SocketAcceptor acceptor) {
            this.acceptor = acceptor;
        }

        @Override
        public void start() {
            io.rsocket.core.RSocketServer server = io.rsocket.core.RSocketServer.create(acceptor);
            customizers.forEach(c -> c.customize(server));
            try {
                bound = server.bind(RdmaServerTransport.create(address, options, filter)).block(timeout);
            } catch (RuntimeException e) {
                throw new RSocketServerException("Cannot start the RSocket server over RDMA on " + address + ": "
                        + e.getMessage() + " (rdmaflux.rsocket.server.address must be an IP address of an RDMA "
                        + "interface, or unset for all of them; the port must be free)", e);
            }
        }

        @Override
        public void stop() {
            RdmaCloseableServer b = bound;
            if (b != null) {
                bound = null;
                b.dispose();
                try {
                    b.onClose().block(timeout);
                } catch (RuntimeException e) {
                    throw new RSocketServerException("The RSocket server over RDMA on " + b.address()
                            + " did not close within " + timeout + ": " + e.getMessage(), e);
                }
            }
        }

        @Override
        public InetSocketAddress address() {
            RdmaCloseableServer b = bound;
            return b != null ? b.address() : null;
        }
    }
}
