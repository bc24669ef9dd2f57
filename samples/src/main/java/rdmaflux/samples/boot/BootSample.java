package rdmaflux.samples.boot;

import java.util.Map;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A Spring Boot application served over RDMA by configuration alone: its {@link Greetings} controller's
 * {@code @MessageMapping} routes answer RSocket requests on {@code rdmaflux.rsocket.server.port}, the actuator
 * shows rdmaflux's meters at {@code /actuator/prometheus} and the RDMA ports at {@code /actuator/health}.
 * Everything RDMA comes from rdmaflux's auto-configuration; this class only names the defaults.
 *
 * <pre>
 * scripts/sample boot.BootSample --rdmaflux.rsocket.server.address=10.0.2.15 --server.port=8080
 * </pre>
 */
@SpringBootApplication
public class BootSample {

    /** Created by Spring. */
    public BootSample() {
    }

    /**
     * The application with its defaults, which command-line arguments override.
     *
     * @return the application, not started
     */
    public static SpringApplication application() {
        SpringApplication app = new SpringApplication(BootSample.class);
        app.setDefaultProperties(Map.of(
                "rdmaflux.rsocket.server.port", "7000",
                "management.endpoints.web.exposure.include", "health,prometheus",
                "management.endpoint.health.show-details", "always",
                "spring.main.banner-mode", "off"));
        return app;
    }

    /**
     * Runs the application until it is stopped.
     *
     * @param args Spring Boot arguments, e.g. {@code --rdmaflux.rsocket.server.address=10.0.2.15}
     */
    public static void main(String[] args) {
        application().run(args);
    }
}
