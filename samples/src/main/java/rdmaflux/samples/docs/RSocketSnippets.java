package rdmaflux.samples.docs;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.core.Resume;
import io.rsocket.util.DefaultPayload;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * The RSocket transport's example in docs/rsocket.md; {@code DocSnippetsIT} runs it on real RDMA.
 */
public final class RSocketSnippets {
    private RSocketSnippets() {
    }

    /**
     * docs/rsocket.md: an RSocket server and client over RDMA, one request-response.
     *
     * @param address an IP address of an RDMA interface
     * @return the response's data
     */
    public static String requestResponse(InetAddress address) {
        // tag::rsocket[]
        Duration timeout = Duration.ofSeconds(10);

        // Server: any RSocket responder; only the transport names RDMA.
        RSocket responder = new RSocket() {
            @Override
            public Mono<Payload> requestResponse(Payload request) {
                String name = request.getDataUtf8();
                request.release();
                return Mono.just(DefaultPayload.create("hello, " + name));
            }
        };
        RdmaCloseableServer server = RSocketServer.create(SocketAcceptor.with(responder))
                .bind(RdmaServerTransport.create(new InetSocketAddress(address, 0)))
                .block(timeout);

        // Client: the same, the other way round.
        RSocket client = RSocketConnector.create()
                .connect(RdmaClientTransport.create(server.address()))
                .block(timeout);
        String answer = client.requestResponse(DefaultPayload.create("RDMA"))
                .map(p -> {
                    String data = p.getDataUtf8();
                    p.release();
                    return data;
                })
                .block(timeout);

        client.dispose();
        server.dispose();
        server.onClose().block(timeout);
        // end::rsocket[]
        return answer;
    }

    /**
     * docs/rsocket.md, "Resumption": both sides resume sessions over the RDMA transport.
     *
     * @param address an IP address of an RDMA interface
     * @return the response's data
     */
    public static String resumable(InetAddress address) {
        Duration timeout = Duration.ofSeconds(10);
        RSocket responder = new RSocket() {
            @Override
            public Mono<Payload> requestResponse(Payload request) {
                String name = request.getDataUtf8();
                request.release();
                return Mono.just(DefaultPayload.create("hello, " + name));
            }
        };
        // tag::rsocket-resume[]
        // Each side keeps a session for a minute without a connection; frames the peer acknowledged in
        // a keepalive leave the store.
        Duration session = Duration.ofMinutes(1);
        RdmaCloseableServer server = RSocketServer.create(SocketAcceptor.with(responder))
                .resume(new Resume().sessionDuration(session).cleanupStoreOnKeepAlive())
                .bind(RdmaServerTransport.create(new InetSocketAddress(address, 0)))
                .block(timeout);

        RSocket client = RSocketConnector.create()
                .resume(new Resume().sessionDuration(session).cleanupStoreOnKeepAlive()
                        .retry(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(500))
                                .maxBackoff(Duration.ofSeconds(2))))
                .keepAlive(Duration.ofSeconds(1), session)
                .connect(RdmaClientTransport.create(server.address()))
                .block(timeout);
        // end::rsocket-resume[]
        String answer = client.requestResponse(DefaultPayload.create("RDMA"))
                .map(p -> {
                    String data = p.getDataUtf8();
                    p.release();
                    return data;
                })
                .block(timeout);
        client.dispose();
        server.dispose();
        server.onClose().block(timeout);
        return answer;
    }
}
