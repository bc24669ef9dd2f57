package rdmaflux.metrics.autoconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import reactor.util.context.Context;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.ServerOptions;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.metrics.RdmaObservations;
import rdmaflux.testing.RdmaTestEnv;

/**
 * On RDMA: the auto-configured loops are the context's, and closing the context ends their threads; with an
 * ObservationRegistry, the context's options observe connects and accepts.
 */
class RdmaAutoConfigurationIT {
    @Test
    void loopsAreTheContextsAndEndWithIt() {
        RdmaTestEnv.device();   // fails, rather than skips, without RDMA
        RdmaLoops[] loops = new RdmaLoops[1];
        RdmaAutoConfigurationTest.RUNNER
                .withPropertyValues("rdmaflux.loops.thread-prefix=boot-test", "rdmaflux.loops.completion-loops=1")
                .run(context -> {
                    loops[0] = context.getBean(RdmaLoops.class);
                    assertEquals(1, loops[0].completionLoops());
                    assertFalse(loops[0].isDisposed());
                    assertTrue(Thread.getAllStackTraces().keySet().stream()
                            .anyMatch(t -> t.getName().startsWith("boot-test-")), "the loops' threads run");
                });
        assertTrue(loops[0].isDisposed(), "closing the context disposes the loops");
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("boot-test-") && t.isAlive()),
                "closing waits for the loops' threads to end");
    }

    /** With an ObservationRegistry bean, a real connect and accept with the context's options are observed. */
    @Test
    void connectsAndAcceptsWithTheContextsOptionsAreObserved() {
        RdmaTestEnv.device();
        TestObservationRegistry observations = TestObservationRegistry.create();
        RdmaAutoConfigurationTest.WITH_METRICS
                .withBean(io.micrometer.observation.ObservationRegistry.class, () -> observations)
                .run(context -> {
                    ConnectionOptions options = context.getBean(ConnectionOptions.class);
                    Duration t = Duration.ofSeconds(60);
                    Observation serving = Observation.start("app.serving", observations);
                    RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                                    AcceptFilter.ACCEPT_ALL, context.getBean(ServerOptions.class))
                            .contextWrite(Context.of(RdmaObservations.PARENT_KEY, serving)).block(t);
                    Observation request = Observation.start("app.request", observations);
                    try {
                        RdmaConnection.connect(server.address(), options)
                                .contextWrite(Context.of(RdmaObservations.PARENT_KEY, request))
                                .block(t).disposeNow(t);
                        Awaitility.await("the accept's observation").atMost(t).untilAsserted(() ->
                                TestObservationRegistryAssert.assertThat(observations)
                                        .hasObservationWithNameEqualTo(RdmaObservations.ACCEPT).that()
                                        .hasParentObservationEqualTo(serving)
                                        .hasLowCardinalityKeyValue("outcome", "success"));
                        TestObservationRegistryAssert.assertThat(observations)
                                .hasObservationWithNameEqualTo(RdmaObservations.CONNECT).that()
                                .hasParentObservationEqualTo(request)
                                .hasLowCardinalityKeyValue("outcome", "success");
                        assertEquals(1, context.getBean(MeterRegistry.class).get(MicrometerRdmaRecorder.CONNECTS)
                                .tags("outcome", "success").counter().count(), "the meters counted it too");
                    } finally {
                        server.disposeNow(t);
                        request.stop();
                        serving.stop();
                    }
                });
    }
}
