package rdmaflux.metrics.autoconfigure;

import java.net.InetSocketAddress;

import io.rsocket.core.RSocketServer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.rsocket.context.RSocketServerBootstrap;
import org.springframework.boot.rsocket.server.RSocketServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.messaging.rsocket.RSocketRequester;
import org.springframework.messaging.rsocket.annotation.support.RSocketMessageHandler;

import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaServerTransport;

/**
 * Spring's RSocket support over RDMA. With {@code rdmaflux.rsocket.server.port} set, the application's
 * {@code @MessageMapping} handlers (Spring Boot's {@link RSocketMessageHandler}) are served by an RSocket
 * server over RDMA, started and stopped with the context, in the place of Spring Boot's own RSocket server
 * (which then backs off); an {@link AcceptFilter} bean, if any, decides which peers are accepted. Clients get
 * an {@link RdmaClientTransports} bean for {@code RSocketRequester.Builder#transport}.
 *
 * <p>The connections of both start from the transports' defaults ({@link RdmaServerTransport#defaultOptions()}:
 * frames handled on the loop that received them), with the {@code rdmaflux.connection.*} properties applied.
 */
@AutoConfiguration(after = RdmaAutoConfiguration.class,
        afterName = "org.springframework.boot.rsocket.autoconfigure.RSocketMessagingAutoConfiguration",
        beforeName = "org.springframework.boot.rsocket.autoconfigure.RSocketServerAutoConfiguration")
@ConditionalOnClass({ RSocketServer.class, RSocketRequester.class })
public final class RdmaRSocketAutoConfiguration {

    /** Created by Spring. */
    public RdmaRSocketAutoConfiguration() {
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(ConnectionOptionsFactory.class)
    RdmaClientTransports rdmaClientTransports(ConnectionOptionsFactory options) {
        return new RdmaClientTransports(options.create(RdmaClientTransport.defaultOptions()));
    }

    /** The RSocket server over RDMA, once its port is configured. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(RSocketServerBootstrap.class)
    @ConditionalOnProperty("rdmaflux.rsocket.server.port")
    @ConditionalOnBean({ RSocketMessageHandler.class, ConnectionOptionsFactory.class })
    static final class ServerConfiguration {

        @Bean
        @ConditionalOnMissingBean
        RdmaRSocketServerFactory rdmaRSocketServerFactory(RdmafluxProperties properties,
                ConnectionOptionsFactory options, ObjectProvider<AcceptFilter> filter,
                ObjectProvider<RSocketServerCustomizer> customizers) {
            RdmafluxProperties.RsocketServer p = properties.getRsocket().getServer();
            InetSocketAddress address = p.getAddress() != null
                    ? new InetSocketAddress(p.getAddress(), p.getPort())
                    : new InetSocketAddress(p.getPort());
            return new RdmaRSocketServerFactory(address, options.create(RdmaServerTransport.defaultOptions()),
                    filter.getIfUnique(() -> AcceptFilter.ACCEPT_ALL), customizers.orderedStream().toList(),
                    p.getTimeout());
        }

        @Bean
        @ConditionalOnMissingBean
        RSocketServerBootstrap rdmaRSocketServerBootstrap(RdmaRSocketServerFactory factory,
                RSocketMessageHandler handler) {
            return new RSocketServerBootstrap(factory, handler.responder());
        }
    }
}
