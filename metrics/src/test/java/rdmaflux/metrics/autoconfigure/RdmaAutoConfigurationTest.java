package rdmaflux.metrics.autoconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.messaging.rsocket.annotation.support.RSocketMessageHandler;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.ServerOptions;
import rdmaflux.cm.Step;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.metrics.RdmaDeviceMetrics;
import rdmaflux.verbs.Rdma;

/**
 * The auto-configuration on the host, without RDMA devices: what it binds, what it registers, what it backs
 * off from. That the loops end with the context is {@link RdmaAutoConfigurationIT}'s, on RDMA; the RSocket
 * server and the health of real ports are proven in the sandbox by samples' {@code SpringBootSampleIT}.
 */
class RdmaAutoConfigurationTest {
    /** The four auto-configurations, and nothing else. */
    static final ApplicationContextRunner RUNNER = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RdmaAutoConfiguration.class, RdmaMetricsAutoConfiguration.class,
                    RdmaHealthAutoConfiguration.class, RdmaRSocketAutoConfiguration.class));

    private final ApplicationContextRunner runner = RUNNER;

    /** The four, with Spring Boot's meter registry. */
    static final ApplicationContextRunner WITH_METRICS = RUNNER.withConfiguration(AutoConfigurations.of(
            MetricsAutoConfiguration.class, CompositeMeterRegistryAutoConfiguration.class,
            SimpleMetricsExportAutoConfiguration.class));

    private final ApplicationContextRunner withMetrics = WITH_METRICS;

    @Test
    void bindsConnectionPropertiesOntoTheOptions() {
        runner.withPropertyValues(
                "rdmaflux.connection.receive-buffers=64",
                "rdmaflux.connection.buffer-size=16KB",
                "rdmaflux.connection.max-inline-data=128B",
                "rdmaflux.connection.protocol=RAW",
                "rdmaflux.connection.busy-poll=2ms",
                "rdmaflux.connection.keepalive=0s",
                "rdmaflux.connection.large-message-budget=8MB",
                "rdmaflux.connection.port-down-policy=FAIL",
                "rdmaflux.connection.recycled-messages=false",
                "rdmaflux.connection.timeouts.connect=5s",
                "rdmaflux.server.accept-queue=16").run(context -> {
                    assertNull(context.getStartupFailure());
                    ConnectionOptions o = context.getBean(ConnectionOptions.class);
                    assertEquals(64, o.receiveBuffers());
                    assertEquals(16384, o.bufferSize());
                    assertEquals(128, o.maxInlineData());
                    assertEquals(ConnectionOptions.Protocol.RAW, o.protocol());
                    assertEquals(ConnectionOptions.CompletionMode.BUSY_POLL, o.completionMode());
                    assertEquals(Duration.ofMillis(2), o.busyPoll());
                    assertEquals(Duration.ZERO, o.keepalive());
                    assertEquals(8L << 20, o.largeMessageBudget());
                    assertEquals(ConnectionOptions.PortDownPolicy.FAIL, o.portDownPolicy());
                    assertFalse(o.recycledMessages());
                    assertEquals(Duration.ofSeconds(5), o.timeout(Step.CONNECT));
                    ConnectionOptions d = ConnectionOptions.defaults();
                    assertEquals(d.sendBuffers(), o.sendBuffers(), "unset properties keep the defaults");
                    assertEquals(d.timeout(Step.ROUTE), o.timeout(Step.ROUTE));
                    RdmaLoops loops = context.getBeanProvider(RdmaLoops.class).getIfAvailable();
                    if (loops != null) { // else loops() would make the shared loops, which needs RDMA
                        assertSame(loops, o.loops());
                    }
                    assertSame(RdmaRecorder.NOOP, o.recorder(), "no registry: no meters");
                    assertEquals(16, context.getBean(ServerOptions.class).acceptQueue());
                });
    }

    @Test
    void completionModeWinsOverBusyPoll() {
        runner.withPropertyValues("rdmaflux.connection.busy-poll=3ms",
                "rdmaflux.connection.completion-mode=EVENT_DRIVEN").run(context -> {
                    ConnectionOptions o = context.getBean(ConnectionOptions.class);
                    assertEquals(ConnectionOptions.CompletionMode.EVENT_DRIVEN, o.completionMode());
                    assertEquals(Duration.ofMillis(3), o.busyPoll());
                });
    }

    @Test
    void anOutOfRangePropertyFailsStartupNamingTheOption() {
        runner.withPropertyValues("rdmaflux.connection.retry-count=9").run(context -> {
            Throwable failure = context.getStartupFailure();
            assertNotNull(failure);
            assertTrue(messages(failure).contains("retryCount must be 0..7, got 9"), messages(failure));
        });
    }

    @Test
    void customizersRunAfterTheProperties() {
        runner.withPropertyValues("rdmaflux.connection.receive-buffers=64")
                .withBean(ConnectionOptionsCustomizer.class, () -> b -> b.sendBuffers(7))
                .run(context -> {
                    ConnectionOptions o = context.getBean(ConnectionOptions.class);
                    assertEquals(64, o.receiveBuffers());
                    assertEquals(7, o.sendBuffers());
                });
    }

    /** Without RDMA the application still starts, without loops; with it (a host with devices), with them. */
    @Test
    void theApplicationStartsWithLoopsOnlyWhereRdmaIsUsable() {
        runner.run(context -> {
            assertNull(context.getStartupFailure());
            assertEquals(Rdma.isAvailable(), !context.getBeansOfType(RdmaLoops.class).isEmpty());
            assertNotNull(context.getBean(ConnectionOptions.class));
        });
    }

    @Test
    void metersGoToTheApplicationsRegistry() {
        withMetrics.run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            MicrometerRdmaRecorder recorder = context.getBean(MicrometerRdmaRecorder.class);
            assertSame(registry, recorder.registry());
            assertSame(recorder, context.getBean(ConnectionOptions.class).recorder());
            assertSame(recorder, context.getBean(RdmaClientTransports.class).options().recorder());
            context.getBean(RdmaDeviceMetrics.class);
            assertNotNull(registry.find(RdmaDeviceMetrics.DEVICES).gauge(), "the device meters are bound");
        });
    }

    /** The recorder is a MeterBinder bean: Boot binds it (to its own registry: nothing changes), after the filters. */
    @Test
    void meterFilterBeansApplyToTheRecordersMeters() {
        withMetrics.withBean(io.micrometer.core.instrument.config.MeterFilter.class,
                        () -> io.micrometer.core.instrument.config.MeterFilter.renameTag("rdmaflux", "error", "exception"))
                .run(context -> {
                    assertNull(context.getStartupFailure());
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    MicrometerRdmaRecorder recorder = context.getBean(MicrometerRdmaRecorder.class);
                    recorder.connectOutcome(false, RdmaRecorder.Outcome.FAILURE, "Rejected");
                    assertEquals(1, registry.get(MicrometerRdmaRecorder.CONNECTS)
                            .tags("outcome", "failure", "exception", "Rejected").counter().count());
                    assertNull(registry.find(MicrometerRdmaRecorder.CONNECTS).tagKeys("error").counter());
                });
    }

    /** With an ObservationRegistry, connects and accepts are observed, and still recorded by the meters. */
    @Test
    void connectsAndAcceptsAreObservedWhereTheApplicationHasAnObservationRegistry() {
        io.micrometer.observation.tck.TestObservationRegistry observations =
                io.micrometer.observation.tck.TestObservationRegistry.create();
        withMetrics.withBean(io.micrometer.observation.ObservationRegistry.class, () -> observations).run(context -> {
            assertNull(context.getStartupFailure());
            MicrometerRdmaRecorder meters = context.getBean(MicrometerRdmaRecorder.class);
            RdmaRecorder recorder = context.getBean(ConnectionOptions.class).recorder();
            assertNotSame(meters, recorder, "the options' recorder observes");
            assertSame(recorder, context.getBean(RdmaClientTransports.class).options().recorder());
            recorder.attempt(true, new java.net.InetSocketAddress("192.0.2.1", 7471), reactor.util.context.Context.empty())
                    .connectOutcome(true, RdmaRecorder.Outcome.SUCCESS, (Throwable) null);
            io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo(rdmaflux.metrics.RdmaObservations.ACCEPT).that()
                    .hasLowCardinalityKeyValue("outcome", "success");
            assertEquals(1, context.getBean(MeterRegistry.class).get(MicrometerRdmaRecorder.ACCEPTS)
                    .tags("outcome", "success").counter().count(), "and the meters counted it");
        });
        withMetrics.withBean(io.micrometer.observation.ObservationRegistry.class, () -> observations)
                .withPropertyValues("rdmaflux.metrics.observations=false")
                .run(context -> assertSame(context.getBean(MicrometerRdmaRecorder.class),
                        context.getBean(ConnectionOptions.class).recorder()));
    }

    @Test
    void deviceMetersCanBeTurnedOff() {
        withMetrics.withPropertyValues("rdmaflux.metrics.devices=false").run(context -> {
            assertTrue(context.getBeansOfType(RdmaDeviceMetrics.class).isEmpty());
            assertEquals(1, context.getBeansOfType(MicrometerRdmaRecorder.class).size());
        });
    }

    @Test
    void backsOffWithoutARegistryOrMicrometer() {
        runner.run(context -> assertTrue(context.getBeansOfType(MicrometerRdmaRecorder.class).isEmpty()));
        runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> assertEquals(1, context.getBeansOfType(MicrometerRdmaRecorder.class).size()));
        runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withClassLoader(new FilteredClassLoader(MeterRegistry.class)).run(context -> {
            assertTrue(context.getBeansOfType(MicrometerRdmaRecorder.class).isEmpty());
            assertSame(RdmaRecorder.NOOP, context.getBean(ConnectionOptions.class).recorder());
        });
    }

    @Test
    void healthIndicatorIsRegisteredAndBacksOff() {
        runner.run(context -> {
            RdmaHealthIndicator health = context.getBean(RdmaHealthIndicator.class);
            // No RDMA port is ACTIVE on the build host: DOWN, with a reason or the error that says why.
            var h = health.health();
            assertEquals(Status.DOWN, h.getStatus(), h.toString());
            assertTrue(h.getDetails().containsKey("reason") || h.getDetails().containsKey("error"), h.toString());
        });
        runner.withPropertyValues("management.health.rdma.enabled=false")
                .run(context -> assertTrue(context.getBeansOfType(RdmaHealthIndicator.class).isEmpty()));
        runner.withClassLoader(new FilteredClassLoader(HealthIndicator.class))
                .run(context -> assertTrue(context.getBeansOfType(RdmaHealthIndicator.class).isEmpty()));
    }

    @Test
    void rsocketClientTransportsStartFromTheTransportsDefaults() {
        runner.withPropertyValues("rdmaflux.connection.receive-buffers=48").run(context -> {
            ConnectionOptions o = context.getBean(RdmaClientTransports.class).options();
            assertEquals(48, o.receiveBuffers());
            assertSame(RdmaClientTransport.defaultOptions().scheduler(), o.scheduler(),
                    "frames are handled where they are received, as the transport's defaults say");
            assertInstanceOf(RdmaClientTransport.class, context.getBean(RdmaClientTransports.class).create("10.0.0.1", 7000));
        });
    }

    @Test
    void rsocketBacksOffWithoutRSocketOrAPort() {
        runner.withClassLoader(new FilteredClassLoader(io.rsocket.core.RSocketServer.class))
                .run(context -> assertTrue(context.getBeansOfType(RdmaClientTransports.class).isEmpty()));
        runner.run(context -> assertTrue(context.getBeansOfType(RdmaRSocketServerFactory.class).isEmpty(),
                "no rdmaflux.rsocket.server.port: no server"));
    }

    @Test
    void rsocketServerServesTheMessageHandlerAndSaysWhatToFixWhenItCannotBind() {
        runner.withBean(RSocketMessageHandler.class, RSocketMessageHandler::new)
                // TEST-NET-1: an address no host has, so binding fails on every machine.
                .withPropertyValues("rdmaflux.rsocket.server.address=192.0.2.1", "rdmaflux.rsocket.server.port=0")
                .run(context -> {
                    Throwable failure = context.getStartupFailure();
                    assertNotNull(failure, "the server starts with the context");
                    assertTrue(messages(failure).contains("Cannot start the RSocket server over RDMA on /192.0.2.1:0"),
                            messages(failure));
                    assertTrue(messages(failure).contains("rdmaflux.rsocket.server.address"), messages(failure));
                });
    }

    private static String messages(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c.getMessage()).append('\n');
        }
        return b.toString();
    }
}
