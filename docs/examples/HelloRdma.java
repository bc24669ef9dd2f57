import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import reactor.core.publisher.Mono;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;
import rdmaflux.verbs.Rdma;

/**
 * A first rdmaflux program: an echo server and a client in one process, over RDMA.
 * Run it with {@code scripts/sample --file docs/examples/HelloRdma.java [ADDRESS]}.
 */
public class HelloRdma {
    public static void main(String[] args) {
        // The IP address of an RDMA interface: the argument, else the sandbox's ($RDMAFLUX_SANDBOX_ADDR).
        String address = args.length > 0 ? args[0] : System.getenv("RDMAFLUX_SANDBOX_ADDR");
        if (address == null) {
            System.err.println("usage: HelloRdma ADDRESS   (an IP address of an RDMA interface)");
            System.exit(2);
        }
        if (!Rdma.isAvailable()) {
            System.err.println(Rdma.unavailabilityCause().getMessage());   // says how to fix it
            System.exit(2);
        }
        Duration timeout = Duration.ofSeconds(30);

        // Server: every accepted connection echoes every message back.
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0),   // 0: any free port
                ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL).block(timeout);
        server.connections()
                .flatMap(conn -> conn.receive().concatMap(msg -> {
                    ByteBuffer copy = ByteBuffer.wrap(msg.toByteArray());
                    msg.release();               // re-posts the receive buffer, returns a credit
                    return conn.send(copy);
                }))
                .subscribe();
        System.out.println("server: listening on " + server.address());

        // Client: connect, send, take the first message back, close; one chain, one block() at its end.
        String echo = Mono.usingWhen(RdmaConnection.connect(server.address()),
                        client -> client.send(ByteBuffer.wrap("hello, RDMA".getBytes(StandardCharsets.UTF_8)))
                                .then(client.receiveBytes().next()),
                        client -> {              // runs once the echo is in (or on failure): close the connection
                            client.dispose();
                            return client.onDispose();
                        })
                .map(bytes -> new String(bytes, StandardCharsets.UTF_8))
                .block(timeout);
        System.out.println("client: got \"" + echo + "\" back");

        server.disposeNow(timeout);
    }
}
