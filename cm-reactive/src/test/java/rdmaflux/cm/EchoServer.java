package rdmaflux.cm;

import java.net.InetSocketAddress;
import java.time.Duration;

import reactor.core.Disposable;
import reactor.core.Disposables;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Test fixture: an rdmaflux server on the test RDMA address that echoes every message back.
 *
 * <p>Pipelined and zero-copy: each received message is sent back straight from its receive buffer
 * (send copies it into a send buffer when posted) and released once that send completed, with up to
 * {@link ConnectionOptions#sendBuffers()} echoes in flight. Holding the message until then keeps the
 * credit, so a client that does not read its echoes slows its own sending down.
 */
final class EchoServer implements AutoCloseable {
    final RdmaServer server;
    private final Disposable.Composite handlers = Disposables.composite();

    EchoServer(ConnectionOptions options) {
        this(new InetSocketAddress(RdmaTestEnv.address(), 0), options, AcceptFilter.ACCEPT_ALL);
    }

    EchoServer(InetSocketAddress at, ConnectionOptions options, AcceptFilter filter) {
        this(at, options, filter, ServerOptions.defaults());
    }

    EchoServer(InetSocketAddress at, ConnectionOptions options, AcceptFilter filter, ServerOptions serverOptions) {
        server = RdmaServer.bind(at, options, filter, serverOptions).block(Duration.ofSeconds(30));
        handlers.add(server.connections().subscribe(c -> {
            handlers.add(c); // closed with the fixture if the client did not close it first
            Disposable echoing = echo(c, options);
            handlers.add(echoing);
            // Forgotten once closed: a long-lived server must not keep every closed connection's buffers.
            Runnable forget = () -> {
                handlers.remove(c);
                handlers.remove(echoing);
            };
            c.onDispose().subscribe(null, e -> forget.run(), forget);
        }));
    }

    /**
     * Echoes every message of one connection, pipelined and zero-copy, and closes it when the peer closes.
     *
     * @param c the connection
     * @param options its options (for the number of echoes in flight)
     * @return stops echoing
     */
    static Disposable echo(RdmaConnection c, ConnectionOptions options) {
        return c.receive().flatMapSequential(m -> c.send(m.asByteBuffer()).doFinally(s -> m.release()),
                        options.sendBuffers())
                .subscribe(null, e -> { }, c::dispose);
    }

    InetSocketAddress address() {
        return server.address();
    }

    @Override
    public void close() {
        handlers.dispose();
        server.disposeNow(Duration.ofSeconds(10));
    }
}
