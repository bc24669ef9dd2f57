package rdmaflux.samples.docs;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

import io.rsocket.core.RSocketServer;
import org.springframework.messaging.handler.annotation.MessageMapping;
import org.springframework.messaging.rsocket.RSocketRequester;
import org.springframework.messaging.rsocket.RSocketStrategies;
import org.springframework.messaging.rsocket.annotation.support.RSocketMessageHandler;
import org.springframework.stereotype.Controller;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import reactor.core.publisher.Mono;

/**
 * docs/rsocket.md's Spring example: {@code @MessageMapping} handlers and an {@code RSocketRequester} over
 * the RDMA transport. Spring is a dependency of the samples only; {@code DocSnippetsIT} runs this on real RDMA.
 */
public final class SpringSnippets {
    private SpringSnippets() {
    }

    /** A Spring messaging controller, as an application has it, whatever its transport. */
    @Controller
    public static final class Greeter {
        /** Creates the controller. */
        public Greeter() {
        }

        /**
         * Answers a greeting.
         *
         * @param name who is greeted
         * @return the greeting
         */
        @MessageMapping("greet")
        public Mono<String> greet(String name) {
            return Mono.just("hello, " + name);
        }
    }

    /**
     * The Spring handler served over RDMA, and a requester calling it over RDMA.
     *
     * @param address an IP address of an RDMA interface
     * @return the answer
     */
    public static String requester(InetAddress address) {
        Duration timeout = Duration.ofSeconds(10);
        // tag::spring[]
        // Server: Spring's annotated handlers as an RSocket responder, bound to the RDMA transport.
        RSocketMessageHandler handler = new RSocketMessageHandler();
        handler.setHandlers(List.of(new Greeter()));
        handler.afterPropertiesSet();
        RdmaCloseableServer server = RSocketServer.create(handler.responder())
                .bind(RdmaServerTransport.create(new InetSocketAddress(address, 0)))
                .block(timeout);

        // Client: an RSocketRequester whose transport is RDMA; the rest of the code is unchanged.
        RSocketRequester requester = RSocketRequester.builder()
                .rsocketStrategies(RSocketStrategies.create())
                .transport(RdmaClientTransport.create(server.address()));
        String answer = requester.route("greet").data("RDMA").retrieveMono(String.class).block(timeout);
        // end::spring[]
        requester.dispose();
        server.dispose();
        server.onClose().block(timeout);
        return answer;
    }
}
