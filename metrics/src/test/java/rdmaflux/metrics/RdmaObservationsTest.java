package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.time.Duration;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import rdmaflux.cm.RdmaConnection;

/** The observation's outcomes, over stand-in connect Monos (the real connect is observed in MicrometerRecorderIT). */
class RdmaObservationsTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final InetSocketAddress REMOTE = new InetSocketAddress("192.0.2.1", 7471);

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final ObservationRegistry observations = ObservationRegistry.create();

    RdmaObservationsTest() {
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
    }

    private Timer timer(String outcome, String error) {
        Timer t = meters.find(RdmaObservations.CONNECT).tag("outcome", outcome).tag("error", error).timer();
        assertNotNull(t, meters.getMetersAsString());
        return t;
    }

    @Test
    void success() {
        RdmaConnection fake = (RdmaConnection) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {RdmaConnection.class}, (p, m, a) -> null);
        StepVerifier.create(RdmaObservations.observe(observations, REMOTE, Mono.just(fake)))
                .expectNext(fake).expectComplete().verify(T);
        assertEquals(1, timer("success", "none").count());
    }

    @Test
    void failureNamesTheError() {
        Mono<RdmaConnection> failing = Mono.error(new IllegalStateException("no route"));
        StepVerifier.create(RdmaObservations.observe(observations, REMOTE, failing)).expectError().verify(T);
        StepVerifier.create(RdmaObservations.observe(observations, REMOTE, failing)).expectError().verify(T);
        assertEquals(2, timer("failure", "IllegalStateException").count());
    }

    @Test
    void cancelled() {
        StepVerifier.create(RdmaObservations.observe(observations, REMOTE, Mono.never())).thenCancel().verify(T);
        assertEquals(1, timer("cancelled", "none").count());
    }

    @Test
    void theRealConnectFailsOrSucceedsObserved() {
        // On the build host (no RDMA) this fails at once; the observation must say so either way.
        StepVerifier.create(RdmaObservations.connect(observations, new InetSocketAddress("127.0.0.1", 1),
                        rdmaflux.cm.ConnectionOptions.builder()
                                .timeout(rdmaflux.cm.Step.ADDRESS, Duration.ofMillis(500))
                                .timeout(rdmaflux.cm.Step.ROUTE, Duration.ofMillis(500))
                                .timeout(rdmaflux.cm.Step.CONNECT, Duration.ofMillis(500)).build()))
                .expectErrorMatches(e -> e instanceof RuntimeException)
                .verify(Duration.ofSeconds(30));
        assertEquals(1, meters.find(RdmaObservations.CONNECT).tag("outcome", "failure").timer().count());
    }
}
