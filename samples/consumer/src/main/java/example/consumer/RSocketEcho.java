package example.consumer;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.util.DefaultPayload;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import reactor.core.publisher.Mono;

/** rdmaflux's RSocket transport: one request-response. Loaded only when rsocket-core is there. */
final class RSocketEcho {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    private RSocketEcho() {
    }

    /**
     * @param address the IP address of an RDMA interface; the server takes any free port on it
     * @param options the connections' options on both sides
     * @param name what the request carries
     * @return the response's data
     */
    static String requestResponse(InetAddress address, ConnectionOptions options, String name) {
        RSocket responder = new RSocket() {
            @Override
            public Mono<Payload> requestResponse(Payload request) {
                String data = request.getDataUtf8();
                request.release();
                return Mono.just(DefaultPayload.create("hello, " + data + " over RSocket"));
            }
        };
        RdmaCloseableServer server = RSocketServer.create(SocketAcceptor.with(responder))
                .bind(RdmaServerTransport.create(new InetSocketAddress(address, 0), options, AcceptFilter.ACCEPT_ALL))
                .block(TIMEOUT);
        RSocket client = RSocketConnector.create().connect(RdmaClientTransport.create(server.address(), options)).block(TIMEOUT);
        try {
            return client.requestResponse(DefaultPayload.create(name))
                    .map(p -> {
                        String data = p.getDataUtf8();
                        p.release();
                        return data;
                    })
                    .block(TIMEOUT);
        } finally {
            client.dispose();
            server.dispose();
            server.onClose().block(TIMEOUT);
        }
    }
}
