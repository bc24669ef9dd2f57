package rdmaflux.cm.rsocket;

import io.netty.buffer.ByteBufAllocator;
import io.rsocket.DuplexConnection;
import io.rsocket.transport.ClientTransport;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import reactor.core.publisher.Mono;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * RSocket's client transport over RDMA: each {@link #connect()} opens one {@link RdmaConnection} to the
 * server's address and carries the RSocket connection's frames as its messages.
 *
 * <pre>{@code
 * RSocket rsocket = RSocketConnector.connectWith(RdmaClientTransport.create(serverAddress)).block(timeout);
 * }</pre>
 *
 * <p>Immutable and reusable: every {@code connect()} subscription makes a new connection.
 */
public final class RdmaClientTransport implements ClientTransport {
    private final InetSocketAddress address;
    private final ConnectionOptions options;
    private final ByteBufAllocator alloc;

    private RdmaClientTransport(InetSocketAddress address, ConnectionOptions options, ByteBufAllocator alloc) {
        this.address = Objects.requireNonNull(address, "address");
        this.options = Objects.requireNonNull(options, "options");
        this.alloc = Objects.requireNonNull(alloc, "alloc");
    }

    /**
     * A transport to an {@link RdmaServerTransport} at {@code address}, with {@link #defaultOptions()}.
     *
     * @param address the server's RDMA-capable IP address and port
     * @return the transport
     */
    public static RdmaClientTransport create(InetSocketAddress address) {
        return create(address, defaultOptions());
    }

    /**
     * The options of {@link #create(InetSocketAddress)}: {@link ConnectionOptions#defaults()} with frames, and
     * so RSocket's handlers and subscribers, run on the connection's completion loop
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
     * A transport with the given connection options (buffer sizes, credits, timeouts, loops, ...).
     *
     * @param address the server's RDMA-capable IP address and port
     * @param options the options of every connection this transport opens
     * @return the transport
     */
    public static RdmaClientTransport create(InetSocketAddress address, ConnectionOptions options) {
        return new RdmaClientTransport(address, options, ByteBufAllocator.DEFAULT);
    }

    /**
     * This transport with another allocator: the one RSocket's frames are reported to come from
     * ({@code DuplexConnection.alloc()}), e.g. a leak-tracking one in tests.
     *
     * @param alloc the allocator
     * @return a new transport
     */
    public RdmaClientTransport allocator(ByteBufAllocator alloc) {
        return new RdmaClientTransport(address, options, alloc);
    }

    /**
     * {@return a new RDMA connection carrying RSocket's frames; fails with the connection's typed
     * {@code RdmaCmException} when it cannot be made}
     */
    @Override
    public Mono<DuplexConnection> connect() {
        return RdmaConnection.connect(address, options).map(c -> new RdmaDuplexConnection(c, alloc, options));
    }

    @Override
    public String toString() {
        return "RdmaClientTransport[" + address + "]";
    }
}
