package rdmaflux.metrics.autoconfigure;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code rdma} health indicator ({@link RdmaHealthIndicator}) when Spring Boot's health support is
 * present; off with {@code management.health.rdma.enabled=false}.
 */
@AutoConfiguration(beforeName = "org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration")
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnEnabledHealthIndicator("rdma")
public final class RdmaHealthAutoConfiguration {

    /** Created by Spring. */
    public RdmaHealthAutoConfiguration() {
    }

    @Bean
    @ConditionalOnMissingBean(name = "rdmaHealthIndicator")
    RdmaHealthIndicator rdmaHealthIndicator() {
        return new RdmaHealthIndicator();
    }
}
