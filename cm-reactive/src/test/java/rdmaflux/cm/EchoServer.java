package rdmaflux.cm;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;

import reactor.core.Disposable;
import reactor.core.Disposables;
import rdmaflux.testing.RdmaTestEnv;

/** Test fixture: an rdmaflux server on the test RDMA address that echoes every message back. */
final class EchoServer implements AutoCloseable {
    final RdmaServer server;
    private final Disposable.Composite handlers = Disposables.composite();

    EchoServer(ConnectionOptions options) {
        server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options, AcceptFilter.ACCEPT_ALL)
                .block(Duration.ofSeconds(30));
        handlers.add(server.connections().subscribe(c -> handlers.add(
                c.receive().concatMap(m -> {
                    ByteBuffer copy = ByteBuffer.wrap(m.toByteArray());
                    m.release();
                    return c.send(copy);
                }, 0).subscribe(null, e -> { }))));
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
