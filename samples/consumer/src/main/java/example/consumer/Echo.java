package example.consumer;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import reactor.core.Disposable;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;

/** The core alone: an echo server and a client in one process, over RDMA. */
final class Echo {
    // Longer than any connection step (Main.STEP), so a step that fails says which.
    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    private Echo() {
    }

    /**
     * Sends {@code text} from a client to an echo server and waits for the echo.
     *
     * @param address the IP address of an RDMA interface; the server takes any free port on it
     * @param options the connections' options on both sides
     * @param text what the client sends
     * @return what came back
     */
    static String roundTrip(InetAddress address, ConnectionOptions options, String text) {
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0), options, AcceptFilter.ACCEPT_ALL)
                .block(TIMEOUT);
        Disposable echoing = server.connections()
                .flatMap(c -> c.receive().concatMap(msg -> {
                    ByteBuffer copy = ByteBuffer.wrap(msg.toByteArray());
                    msg.release(); // re-posts the receive buffer
                    return c.send(copy);
                }))
                .subscribe();
        RdmaConnection client = RdmaConnection.connect(server.address(), options).block(TIMEOUT);
        try {
            byte[] echo = client.send(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)))
                    .then(client.receiveBytes().next())
                    .block(TIMEOUT);
            return new String(echo, StandardCharsets.UTF_8);
        } finally {
            client.disposeNow(TIMEOUT);
            server.disposeNow(TIMEOUT);
            echoing.dispose();
        }
    }
}
