package rdmaflux.samples.docs;

import java.nio.charset.StandardCharsets;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.messaging.handler.annotation.MessageMapping;
import org.springframework.messaging.rsocket.RSocketRequester;
import org.springframework.stereotype.Controller;
import reactor.core.publisher.Mono;

import rdmaflux.metrics.autoconfigure.ConnectionOptionsCustomizer;
import rdmaflux.metrics.autoconfigure.RdmaClientTransports;

/**
 * docs/spring-boot.md's examples: a controller served over RDMA by configuration, a requester that connects
 * over RDMA, and a customizer of the connection options. {@code SpringBootSampleIT} runs the same wiring
 * (the sample {@code rdmaflux.samples.boot.BootSample}) in the sandbox.
 */
public final class SpringBootSnippets {
    private SpringBootSnippets() {
    }

    // tag::controller[]
    /** Served over RDMA once rdmaflux.rsocket.server.port is set: nothing else in the code names RDMA. */
    @Controller
    public static class Quotes {
        /** Created by Spring. */
        public Quotes() {
        }

        /**
         * Answers a request.
         *
         * @param symbol what is asked for
         * @return the answer
         */
        @MessageMapping("quote")
        public Mono<String> quote(String symbol) {
            return Mono.just(symbol + ": 42");
        }
    }
    // end::controller[]

    /**
     * A request to another application's {@code quote} route, over RDMA.
     *
     * @param builder Spring Boot's {@code RSocketRequester.Builder} bean
     * @param rdma rdmaflux's transports, a bean of the auto-configuration
     * @param host the other application's RDMA-capable IP address
     * @return the answer, when it comes
     */
    public static Mono<String> ask(RSocketRequester.Builder builder, RdmaClientTransports rdma, String host) {
        // tag::requester[]
        RSocketRequester requester = builder.transport(rdma.create(host, 7000));
        Mono<String> answer = requester.route("quote").data("RDMA").retrieveMono(String.class);
        // end::requester[]
        return answer;
    }

    /** Connection options that are code, not properties. */
    @Configuration(proxyBeanMethods = false)
    public static class RdmaOptions {
        /** Created by Spring. */
        public RdmaOptions() {
        }

        // tag::customizer[]
        /**
         * Sends a greeting with every connect request and accept.
         *
         * @return the customizer, applied after the rdmaflux.connection.* properties
         */
        @Bean
        ConnectionOptionsCustomizer greeting() {
            return options -> options.privateData("quotes-v1".getBytes(StandardCharsets.US_ASCII));
        }
        // end::customizer[]
    }
}
