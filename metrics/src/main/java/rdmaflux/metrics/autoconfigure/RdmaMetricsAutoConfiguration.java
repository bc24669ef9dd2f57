package rdmaflux.metrics.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

import rdmaflux.cm.RdmaRecorder;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.metrics.RdmaDeviceMetrics;

/**
 * rdmaflux's meters in the application's {@link MeterRegistry}: a {@link MicrometerRdmaRecorder} that the
 * auto-configured connection options report to, and the {@link RdmaDeviceMetrics} (a {@code MeterBinder},
 * bound by Spring Boot's metrics auto-configuration; off with {@code rdmaflux.metrics.devices=false}).
 * Backs off without Micrometer or without a registry bean.
 */
@AutoConfiguration(before = RdmaAutoConfiguration.class, afterName = {
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration" })
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean(MeterRegistry.class)
public final class RdmaMetricsAutoConfiguration {

    /** Created by Spring. */
    public RdmaMetricsAutoConfiguration() {
    }

    @Bean
    @ConditionalOnMissingBean(RdmaRecorder.class)
    MicrometerRdmaRecorder rdmaRecorder(MeterRegistry registry) {
        return MicrometerRdmaRecorder.of(registry);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(name = "rdmaflux.metrics.devices", havingValue = "true", matchIfMissing = true)
    RdmaDeviceMetrics rdmaDeviceMetrics() {
        return new RdmaDeviceMetrics();
    }
}
