package rdmaflux.metrics.autoconfigure;

import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.ServerOptions;
import rdmaflux.metrics.RdmaObservations;
import rdmaflux.verbs.Rdma;

/**
 * rdmaflux in a Spring Boot application: an {@link RdmaLoops} bean disposed with the context, and the
 * {@link ConnectionOptions} and {@link ServerOptions} of the {@code rdmaflux.*} properties, whose recorder
 * also observes connects and accepts when the application has an {@link ObservationRegistry}
 * ({@code rdmaflux.metrics.observations=false} turns that off). Meters, health and RSocket have
 * auto-configurations of their own, which back off without Micrometer, Actuator or RSocket.
 */
@AutoConfiguration
@EnableConfigurationProperties(RdmafluxProperties.class)
public final class RdmaAutoConfiguration {

    /** Created by Spring. */
    public RdmaAutoConfiguration() {
    }

    /**
     * Loops of the application's own, so that closing the context ends their threads and every connection on
     * them ({@link RdmaLoops#shared()} would outlive the context). Only where RDMA is usable: elsewhere (a
     * build host, a developer's laptop) the application starts without them, its options name no loops, and
     * connecting fails with the {@code RdmaUnavailableException} that says what is missing.
     *
     * @param properties the properties
     * @return the factory of the loops, whose threads start when they are first used
     */
    @Bean
    @ConditionalOnMissingBean(RdmaLoops.class)
    @Conditional(OnRdmaAvailableCondition.class)
    RdmaLoopsFactoryBean rdmaLoops(RdmafluxProperties properties) {
        RdmafluxProperties.Loops p = properties.getLoops();
        Integer n = p.getCompletionLoops();
        return new RdmaLoopsFactoryBean(p.getThreadPrefix(), n != null ? n : RdmaLoops.DEFAULT_COMPLETION_LOOPS,
                p.getShutdownTimeout());
    }

    @Bean
    @ConditionalOnMissingBean
    ConnectionOptionsFactory rdmaConnectionOptionsFactory(RdmafluxProperties properties,
            ObjectProvider<RdmaLoops> loops, ObjectProvider<RdmaRecorder> recorder,
            ObjectProvider<ObservationRegistry> observations, ObjectProvider<ConnectionOptionsCustomizer> customizers) {
        RdmaLoops l = loops.getIfAvailable();
        if (l == null && !Rdma.isAvailable()) {
            System.getLogger(RdmaAutoConfiguration.class.getName()).log(System.Logger.Level.WARNING,
                    "rdmaflux: RDMA is unavailable here, so the application has no RdmaLoops and its RDMA connections "
                            + "will fail: " + Rdma.unavailabilityCause().getMessage());
        }
        RdmaRecorder r = recorder.getIfUnique(() -> RdmaRecorder.NOOP);
        ObservationRegistry o = properties.getMetrics().isObservations() ? observations.getIfUnique() : null;
        if (o != null && !o.isNoop()) {
            r = RdmaObservations.recorder(o, r); // connects and accepts observed, everything recorded by r as well
        }
        return new ConnectionOptionsFactory(properties.getConnection(), l, r, customizers.orderedStream().toList());
    }

    @Bean
    @ConditionalOnMissingBean
    ConnectionOptions rdmaConnectionOptions(ConnectionOptionsFactory factory) {
        return factory.create(ConnectionOptions.defaults());
    }

    @Bean
    @ConditionalOnMissingBean
    ServerOptions rdmaServerOptions(RdmafluxProperties properties) {
        return ServerOptions.builder().acceptQueue(properties.getServer().getAcceptQueue()).build();
    }
}
