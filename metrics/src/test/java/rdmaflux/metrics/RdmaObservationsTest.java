package rdmaflux.metrics;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.net.InetSocketAddress;
import java.time.Duration;

import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.micrometer.observation.tck.TestObservationRegistry;
import org.junit.jupiter.api.Test;

import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.util.context.Context;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RdmaRecorder.Outcome;
import rdmaflux.cm.Step;

/**
 * The observations' names, keys and parents, read back from a {@link TestObservationRegistry}: a connect's
 * and an accept's observation from the recorder's attempt hook (as cm-reactive calls it), an operation's
 * from {@link RdmaObservations#operation}, each nested under the observation in the Reactor context. The
 * real connect and accept are observed in ObservationsIT.
 */
class RdmaObservationsTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final InetSocketAddress REMOTE = new InetSocketAddress("192.0.2.1", 7471);

    private final TestObservationRegistry observations = TestObservationRegistry.create();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MicrometerRdmaRecorder metered = MicrometerRdmaRecorder.of(meters);
    private final RdmaRecorder recorder = RdmaObservations.recorder(observations, metered);

    /** Every context the registry's handler saw, started first. */
    private java.util.List<Observation.Context> contexts() {
        java.util.List<Observation.Context> all = new java.util.ArrayList<>();
        assertThat(observations).hasHandledContextsThatSatisfy(all::addAll);
        return all;
    }

    private Observation.Context named(String contextualName) {
        return contexts().stream().filter(c -> contextualName.equals(c.getContextualName())).findFirst()
                .orElseThrow(() -> new AssertionError("no observation \"" + contextualName + "\" in " + contexts()));
    }

    private Context under(Observation parent) {
        return Context.of(RdmaObservations.PARENT_KEY, parent);
    }

    @Test
    void theParentKeyIsMicrometers() {
        assertEquals(ObservationThreadLocalAccessor.KEY, RdmaObservations.PARENT_KEY);
    }

    @Test
    void aConnectIsAChildOfTheObservationInItsSubscribersContext() {
        Observation parent = Observation.start("app.request", observations);
        RdmaRecorder attempt = recorder.attempt(false, REMOTE, under(parent));
        attempt.stepDuration(Step.ADDRESS, 1_000);
        attempt.connectOutcome(false, Outcome.SUCCESS, (Throwable) null);
        parent.stop();

        assertThat(observations).hasNumberOfObservationsEqualTo(2)
                .hasObservationWithNameEqualTo(RdmaObservations.CONNECT).that()
                .hasContextualNameEqualTo("rdma connect")
                .hasParentObservationEqualTo(parent)
                .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.SUCCESS)
                .hasLowCardinalityKeyValue(RdmaTags.ERROR, RdmaTags.NONE)
                .hasHighCardinalityKeyValue(RdmaTags.REMOTE, "192.0.2.1:7471")
                .hasBeenStarted().hasBeenStopped();
        // The meters behind it recorded the same attempt.
        assertEquals(1, meters.get(MicrometerRdmaRecorder.CONNECTS).tags(RdmaTags.OUTCOME, RdmaTags.SUCCESS,
                RdmaTags.ERROR, RdmaTags.NONE).counter().count());
        assertEquals(1, meters.get(MicrometerRdmaRecorder.CONNECT_STEP).tag(RdmaTags.STEP, "address").timer().count());
    }

    @Test
    void aFailedAcceptCarriesItsExceptionAndTheSameErrorAsTheMeters() {
        Observation server = Observation.start("app.server", observations);
        RdmaRecorder attempt = recorder.attempt(true, REMOTE, under(server));
        RdmaCmException.StepTimeout timeout = new RdmaCmException.StepTimeout(Step.ACCEPT, Duration.ofSeconds(1));
        attempt.connectOutcome(true, Outcome.FAILURE, timeout);
        attempt.connectOutcome(true, Outcome.FAILURE, timeout); // a second report ends nothing twice
        server.stop();

        assertThat(observations).hasObservationWithNameEqualTo(RdmaObservations.ACCEPT).that()
                .hasContextualNameEqualTo("rdma accept")
                .hasParentObservationEqualTo(server)
                .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.FAILURE)
                .hasLowCardinalityKeyValue(RdmaTags.ERROR, "StepTimeout")
                .assertThatError().isSameAs(timeout);
        assertEquals(2, meters.get(MicrometerRdmaRecorder.ACCEPTS).tags(RdmaTags.OUTCOME, RdmaTags.FAILURE,
                RdmaTags.ERROR, "StepTimeout").counter().count(), "the meters count each report");
    }

    @Test
    void anAcceptWithoutAParentInItsContextIsARootEvenWhereAnObservationIsCurrent() {
        Observation unrelated = Observation.start("unrelated", observations);
        try (Observation.Scope ignored = unrelated.openScope()) {
            recorder.attempt(true, REMOTE, Context.empty()).connectOutcome(true, Outcome.CANCELLED, (Throwable) null);
        }
        unrelated.stop();
        assertThat(observations).hasObservationWithNameEqualTo(RdmaObservations.ACCEPT).that()
                .doesNotHaveParentObservation()
                .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.CANCELLED);
    }

    @Test
    void aConnectWithoutAParentInItsContextTakesTheCurrentObservation() {
        Observation current = Observation.start("app.current", observations);
        try (Observation.Scope ignored = current.openScope()) {
            recorder.attempt(false, REMOTE, Context.empty()).connectOutcome(false, Outcome.SUCCESS, (Throwable) null);
        }
        current.stop();
        assertThat(observations).hasObservationWithNameEqualTo(RdmaObservations.CONNECT).that()
                .hasParentObservationEqualTo(current);
    }

    @Test
    void withTheNoopRegistryTheAttemptIsTheDelegatesOwn() {
        RdmaRecorder r = RdmaObservations.recorder(ObservationRegistry.NOOP, metered);
        assertSame(metered, r.attempt(false, REMOTE, Context.empty()), "nothing wrapped, nothing allocated");
        r.messageSent(10);
        assertEquals(10, meters.get(MicrometerRdmaRecorder.MESSAGES_SENT_BYTES).counter().count());
    }

    @Test
    void operationsNestUnderTheContextsObservationAndUnderEachOther() {
        Observation parent = Observation.start("app.request", observations);
        Mono<Long> inner = Mono.just(7L).transform(RdmaObservations.operation(observations, null, "faa", REMOTE));
        Mono<Long> outer = inner.transform(RdmaObservations.operation(observations, null, "cas", REMOTE));
        StepVerifier.create(outer.contextWrite(under(parent))).expectNext(7L).expectComplete().verify(T);
        parent.stop();

        assertThat(observations).hasNumberOfObservationsWithNameEqualTo(RdmaObservations.OPERATION, 2);
        Observation.Context cas = named("rdma cas");
        Observation.Context faa = named("rdma faa");
        assertSame(parent, cas.getParentObservation());
        assertSame(cas, faa.getParentObservation().getContextView(), "the inner operation is the outer's child");
        assertEquals("cas", cas.getLowCardinalityKeyValue(RdmaTags.OP).getValue());
        assertEquals(RdmaTags.SUCCESS, faa.getLowCardinalityKeyValue(RdmaTags.OUTCOME).getValue());
    }

    @Test
    void anOperationsFailureAndCancelAreItsOutcome() {
        Mono<Void> failing = Mono.<Void>error(new IllegalStateException("refused"))
                .transform(RdmaObservations.operation(observations, null, "write", REMOTE));
        StepVerifier.create(failing).expectError(IllegalStateException.class).verify(T);
        StepVerifier.create(Mono.never().transform(RdmaObservations.operation(observations, null, "read", REMOTE)))
                .thenCancel().verify(T);

        assertThat(observations).hasAnObservation(o -> o.hasLowCardinalityKeyValue(RdmaTags.OP, "write")
                        .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.FAILURE)
                        .hasLowCardinalityKeyValue(RdmaTags.ERROR, "IllegalStateException")
                        .doesNotHaveParentObservation())
                .hasAnObservation(o -> o.hasLowCardinalityKeyValue(RdmaTags.OP, "read")
                        .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.CANCELLED)
                        .hasLowCardinalityKeyValue(RdmaTags.ERROR, RdmaTags.NONE));
    }

    @Test
    void aConventionRenamesAndAGlobalOneAppliesWhenNoneIsGiven() {
        RdmaObservationConvention renamed = new DefaultRdmaObservationConvention("orders.rdma.connect");
        RdmaObservations.recorder(observations, renamed, metered).attempt(false, REMOTE, Context.empty())
                .connectOutcome(false, Outcome.SUCCESS, (Throwable) null);
        assertThat(observations).hasObservationWithNameEqualTo("orders.rdma.connect").that()
                .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.SUCCESS);

        TestObservationRegistry global = TestObservationRegistry.create();
        final class Global extends DefaultRdmaObservationConvention
                implements io.micrometer.observation.GlobalObservationConvention<RdmaObservationContext> {
            Global() {
                super("orders.rdma.any");
            }
        }
        global.observationConfig().observationConvention(new Global());
        RdmaObservations.recorder(global, metered).attempt(true, REMOTE, Context.empty())
                .connectOutcome(true, Outcome.SUCCESS, (Throwable) null);
        assertThat(global).hasObservationWithNameEqualTo("orders.rdma.any");
    }

    /** With DefaultMeterObservationHandler an observation is a timer whose tags are the meters' vocabulary. */
    @Test
    void anObservationsTimerSharesTheMetersTags() {
        ObservationRegistry timed = ObservationRegistry.create();
        timed.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        RdmaRecorder r = RdmaObservations.recorder(timed, metered);
        r.attempt(false, REMOTE, Context.empty()).connectOutcome(false, Outcome.FAILURE,
                new RdmaCmException.StepTimeout(Step.ROUTE, Duration.ofSeconds(1)));
        assertEquals(1, meters.get(RdmaObservations.CONNECT).tags(RdmaTags.OUTCOME, RdmaTags.FAILURE,
                RdmaTags.ERROR, "StepTimeout").timer().count());
        assertEquals(1, meters.get(MicrometerRdmaRecorder.CONNECTS).tags(RdmaTags.OUTCOME, RdmaTags.FAILURE,
                RdmaTags.ERROR, "StepTimeout").counter().count());
        assertNull(meters.find(RdmaObservations.CONNECT).tagKeys(RdmaTags.REMOTE).timer(),
                "the high-cardinality remote stays off the timer");
    }

    @Test
    void theRealConnectIsObservedEvenWhenItFailsBeforeItsAttempt() {
        // On the build host (no RDMA) this fails at once; in the sandbox the port refuses. Either way, observed.
        Observation parent = Observation.start("app.request", observations);
        ConnectionOptions options = ConnectionOptions.builder()
                .timeout(Step.ADDRESS, Duration.ofMillis(500))
                .timeout(Step.ROUTE, Duration.ofMillis(500))
                .timeout(Step.CONNECT, Duration.ofMillis(500)).build();
        StepVerifier.create(RdmaObservations.connect(observations, new InetSocketAddress("127.0.0.1", 1), options)
                        .contextWrite(under(parent)))
                .expectErrorMatches(e -> e instanceof RuntimeException)
                .verify(Duration.ofSeconds(30));
        parent.stop();
        assertThat(observations).hasNumberOfObservationsWithNameEqualTo(RdmaObservations.CONNECT, 1)
                .hasObservationWithNameEqualTo(RdmaObservations.CONNECT).that()
                .hasParentObservationEqualTo(parent)
                .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.FAILURE);
        assertInstanceOf(RuntimeException.class, named("rdma connect").getError());
    }
}
