package rdmaflux.cm.rsocket;

import io.netty.buffer.ByteBufAllocator;
import io.rsocket.transport.ServerTransport;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaServer;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * RSocket's server transport over RDMA: {@link #start} binds an {@link RdmaServer} and hands each
 * connection it accepts to RSocket as a {@code DuplexConnection}.
 *
 * <pre>{@code
 * RdmaCloseableServer server = RSocketServer.create(acceptor)
 *         .bind(RdmaServerTransport.create(new InetSocketAddress(ip, 0))).block(timeout);
 * }</pre>
 *
 * <p>Immutable; each {@code start} binds a new server.
 */
public final class RdmaServerTransport implements ServerTransport<RdmaCloseableServer> {
    private final InetSocketAddress address;
    private final ConnectionOptions options;
    private final AcceptFilter filter;
    private final ByteBufAllocator alloc;

    private RdmaServerTransport(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter,
            ByteBufAllocator alloc) {
        this.address = Objects.requireNonNull(address, "address");
        this.options = Objects.requireNonNull(options, "options");
        this.filter = Objects.requireNonNull(filter, "filter");
        this.alloc = Objects.requireNonNull(alloc, "alloc");
    }

    /**
     * A transport listening on {@code address} with {@link #defaultOptions()}, accepting every peer.
     *
     * @param address an RDMA-capable local IP address; port 0 picks a free port
     * @return the transport
     */
    public static RdmaServerTransport create(InetSocketAddress address) {
        return create(address, defaultOptions(), AcceptFilter.ACCEPT_ALL);
    }

    /**
     * The options of {@link #create(InetSocketAddress)}: {@link ConnectionOptions#defaults()} with frames, and
     * so RSocket's acceptor, handlers and subscribers, run on the rdmaflux loop that received them
     * ({@code Schedulers.immediate()}), as rsocket-transport-netty runs them on its event loops. Don't block
     * there: it holds up every connection on that loop; move blocking work with {@code publishOn}. Start from
     * these to change other options, or give a scheduler for frames to hop to it instead.
     *
     * @return the options
     */
    public static ConnectionOptions defaultOptions() {
        return TransportDefaults.OPTIONS;
    }

    /**
     * A transport with the given options and accept filter.
     *
     * @param address an RDMA-capable local IP address; port 0 picks a free port
     * @param options the options of every accepted connection
     * @param filter decides which connect requests are accepted, before RSocket sees them
     * @return the transport
     */
    public static RdmaServerTransport create(InetSocketAddress address, ConnectionOptions options,
            AcceptFilter filter) {
        return new RdmaServerTransport(address, options, filter, ByteBufAllocator.DEFAULT);
    }

    /**
     * This transport with another allocator ({@code DuplexConnection.alloc()} of accepted connections).
     *
     * @param alloc the allocator
     * @return a new transport
     */
    public RdmaServerTransport allocator(ByteBufAllocator alloc) {
        return new RdmaServerTransport(address, options, filter, alloc);
    }

    /**
     * Binds the server; each accepted connection goes to {@code acceptor}, and is closed if the acceptor
     * fails (e.g. a bad SETUP frame).
     *
     * @param acceptor RSocket's handler of new connections
     * @return the started server; fails with a typed {@code RdmaCmException} when the address cannot be bound
     */
    @Override
    public Mono<RdmaCloseableServer> start(ConnectionAcceptor acceptor) {
        Objects.requireNonNull(acceptor, "acceptor");
        return RdmaServer.bind(address, options, filter).map(server -> {
            Disposable accepting = server.connections().subscribe(c -> Mono.from(
                    acceptor.apply(new RdmaDuplexConnection(c, alloc, options)))
                    .subscribe(null, e -> c.dispose()));
            return new Bound(server, accepting);
        });
    }

    @Override
    public String toString() {
        return "RdmaServerTransport[" + address + "]";
    }

    /** The started server; any thread. */
    private record Bound(RdmaServer server, Disposable accepting) implements RdmaCloseableServer {
        @Override
        public InetSocketAddress address() {
            return server.address();
        }

        @Override
        public Mono<Void> onClose() {
            return server.onDispose();
        }

        @Override
        public void dispose() {
            accepting.dispose();
            server.dispose();
        }

        @Override
        public boolean isDisposed() {
            return server.isDisposed();
        }
    }
}
