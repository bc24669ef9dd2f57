package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.util.context.Context;
import reactor.test.StepVerifier;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/** Known workloads over real connections, with the Micrometer recorder on both ends; counters checked exactly. */
class MicrometerRecorderIT {
    private static final Duration T = Duration.ofSeconds(120);
    private static final int MESSAGES = 1000;
    private static final int SIZE = 4096;

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.of(registry);

    private ConnectionOptions options() {
        return ConnectionOptions.defaults().toBuilder().recorder(recorder).build();
    }

    private RdmaServer server(ConnectionOptions options) {
        return RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options, AcceptFilter.ACCEPT_ALL)
                .block(T);
    }

    private double count(String name, String... tags) {
        return registry.get(name).tags(tags).counter().count();
    }

    private double gauge(String name) {
        return registry.get(name).gauge().value();
    }

    private double stepCount(String step) {
        return registry.get(MicrometerRdmaRecorder.CONNECT_STEP).tag("step", step).timer().count();
    }

    /** Gauges move on the CM and completion threads after the user-visible signal: wait for the value. */
    private static void eventually(String what, double expected, DoubleSupplier actual) {
        Awaitility.await(what).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
                .untilAsserted(() -> assertEquals(expected, actual.getAsDouble(), what));
    }

    @Test
    void thousandMessagesOfFourKibCountedExactly() throws Exception {
        ConnectionOptions options = options();
        RdmaServer server = server(options);
        AtomicInteger bytes = new AtomicInteger();
        Sinks.One<Integer> done = Sinks.one();
        AtomicInteger received = new AtomicInteger();
        List<RdmaConnection> accepted = new CopyOnWriteArrayList<>();
        Disposable sub = server.connections().subscribe(c -> {
            accepted.add(c);
            c.receive().subscribe(m -> {
                bytes.addAndGet(m.length());
                m.release();
                if (received.incrementAndGet() == MESSAGES) {
                    done.tryEmitValue(MESSAGES);
                }
            }, e -> done.tryEmitError(e));
        });
        io.micrometer.observation.ObservationRegistry observations = io.micrometer.observation.ObservationRegistry.create();
        observations.observationConfig().observationHandler(
                new io.micrometer.core.instrument.observation.DefaultMeterObservationHandler(registry));
        RdmaConnection client = RdmaObservations.connect(observations, server.address(), options).block(T);
        assertEquals(1, registry.get(RdmaObservations.CONNECT).tags("outcome", "success", "error", "none").timer()
                .count(), "the connect was observed");
        try {
            byte[] payload = new byte[SIZE];
            client.send(Flux.range(0, MESSAGES).map(i -> {
                payload[0] = i.byteValue();
                return ByteBuffer.wrap(payload.clone());
            })).block(T);
            StepVerifier.create(done.asMono()).expectNext(MESSAGES).expectComplete().verify(T);
            assertEquals(MESSAGES * SIZE, bytes.get());

            assertEquals(MESSAGES, count(MicrometerRdmaRecorder.MESSAGES_SENT));
            assertEquals((double) MESSAGES * SIZE, count(MicrometerRdmaRecorder.MESSAGES_SENT_BYTES));
            assertEquals(MESSAGES, count(MicrometerRdmaRecorder.MESSAGES_RECEIVED));
            assertEquals((double) MESSAGES * SIZE, count(MicrometerRdmaRecorder.MESSAGES_RECEIVED_BYTES));
            Timer send = registry.get(MicrometerRdmaRecorder.OPERATION_LATENCY).tag("op", "send").timer();
            assertEquals(MESSAGES, send.count());
            assertTrue(send.max(java.util.concurrent.TimeUnit.NANOSECONDS) > 0);
            for (String op : new String[] {"write", "write_imm", "read", "cas", "faa", "other"}) {
                assertEquals(0, registry.get(MicrometerRdmaRecorder.OPERATION_LATENCY).tag("op", op).timer().count(), op);
            }
            assertEquals(1, count(MicrometerRdmaRecorder.CONNECTS, "outcome", "success"));
            assertEquals(1, count(MicrometerRdmaRecorder.ACCEPTS, "outcome", "success"));
            assertEquals(1, registry.get(MicrometerRdmaRecorder.CONNECTS).counters().stream()
                    .mapToDouble(c -> c.count()).sum(), "no failed or cancelled connects");
            assertEquals(1, stepCount("address"));
            assertEquals(1, stepCount("route"));
            assertEquals(1, stepCount("connect"));
            assertEquals(1, stepCount("accept"));
            assertEquals(2, gauge(MicrometerRdmaRecorder.CONNECTIONS_ACTIVE));
            assertEquals(0, registry.get(MicrometerRdmaRecorder.COMPLETION_ERRORS).counters().stream()
                    .mapToDouble(c -> c.count()).sum());
            // At rest every receive buffer is posted again and every send has completed: both sides
            // post receiveBuffers plus the control buffers.
            int posted = 2 * (options.receiveBuffers() + ConnectionOptions.CONTROL_RECEIVE_BUFFERS);
            eventually("outstanding work requests at rest", posted,
                    () -> gauge(MicrometerRdmaRecorder.OUTSTANDING));
            double polls = count(MicrometerRdmaRecorder.CQ_POLLS);
            double completions = count(MicrometerRdmaRecorder.CQ_COMPLETIONS);
            // Every receive completes; sends are signaled selectively, at least one in 16 (a completion also
            // ends the unsignaled sends before it), so there are far fewer than one completion per send.
            assertTrue(completions >= MESSAGES + MESSAGES / 16.0 && completions < 2 * MESSAGES,
                    "each receive completes, and one send in at most 16: " + completions);
            assertTrue(polls >= 1 && completions <= 32 * polls, "a poll returns at most the poll array: "
                    + completions + " completions in " + polls + " polls");
        } finally {
            client.disposeNow(T);
            sub.dispose();
            server.disposeNow(T);
        }
        eventually("active connections after close", 0, () -> gauge(MicrometerRdmaRecorder.CONNECTIONS_ACTIVE));
        assertEquals(1, stepCount("connect"));
        for (RdmaConnection c : accepted) {
            c.onDispose().block(T);
        }
        // The client disconnected, the server answered the peer's DISCONNECTED: each side's disconnect once.
        eventually("disconnect steps of both sides", 2, () -> stepCount("disconnect"));
    }

    @Test
    void aSendWithoutCreditIsCountedOnce() throws Exception {
        int credits = 4;
        ConnectionOptions options = options().toBuilder().receiveBuffers(credits).build();
        RdmaServer server = server(options);
        List<RdmaMessage> held = new CopyOnWriteArrayList<>();
        Disposable sub = server.connections().subscribe(c -> c.receive().subscribe(held::add));
        RdmaConnection client = RdmaConnection.connect(server.address(), options).block(T);
        try {
            for (int i = 0; i < credits; i++) {
                client.send(ByteBuffer.wrap(new byte[] {(byte) i})).block(T);
            }
            assertEquals(0, count(MicrometerRdmaRecorder.CREDIT_WAITS));
            // The server holds all four buffers: the fifth send must wait for a credit.
            Sinks.Empty<Void> fifth = Sinks.empty();
            client.send(ByteBuffer.wrap(new byte[] {4})).subscribe(null, fifth::tryEmitError, fifth::tryEmitEmpty);
            eventually("credit waits", 1, () -> count(MicrometerRdmaRecorder.CREDIT_WAITS));
            eventually("messages held", credits, held::size);
            for (RdmaMessage m : held) {
                m.release(); // returns the credits
            }
            StepVerifier.create(fifth.asMono()).expectComplete().verify(T);
            eventually("messages received", credits + 1, held::size);
            held.get(credits).release();
            assertEquals(1, count(MicrometerRdmaRecorder.CREDIT_WAITS));
            assertEquals(credits + 1, count(MicrometerRdmaRecorder.MESSAGES_SENT));
        } finally {
            client.disposeNow(T);
            sub.dispose();
            server.disposeNow(T);
        }
        eventually("active connections after close", 0, () -> gauge(MicrometerRdmaRecorder.CONNECTIONS_ACTIVE));
    }

    @Test
    void aRemoteAccessErrorIsCountedByStatus() throws Exception {
        ConnectionOptions options = options();
        RdmaServer server = server(options);
        Disposable sub = server.connections().subscribe(c -> c.receive().subscribe(RdmaMessage::release, e -> { }));
        RdmaConnection client = RdmaConnection.connect(server.address(), options).block(T);
        try (Arena arena = Arena.ofShared()) {
            RegisteredBuffer local = client.register(arena.allocate(64, 8), AccessFlags.LOCAL_WRITE);
            RemoteBuffer bogus = new RemoteBuffer(0x1000, 64, 0x12345);
            StepVerifier.create(client.write(local, bogus))
                    .expectErrorSatisfies(e -> assertEquals(rdmaflux.verbs.WcStatus.REM_ACCESS_ERR,
                            assertInstanceOf(RdmaCmException.CompletionError.class, e).wcStatus()))
                    .verify(T);
            eventually("remote access errors", 1, () -> count(MicrometerRdmaRecorder.COMPLETION_ERRORS,
                    "status", "rem_access_err"));
            assertEquals(0, registry.get(MicrometerRdmaRecorder.OPERATION_LATENCY).tag("op", "write").timer().count(),
                    "a failed write has no latency");
        } finally {
            client.dispose();
            client.onDispose().block(T);
            sub.dispose();
            server.disposeNow(T);
        }
        eventually("active connections after the failure", 0,
                () -> gauge(MicrometerRdmaRecorder.CONNECTIONS_ACTIVE));
        assertEquals(1, count(MicrometerRdmaRecorder.COMPLETION_ERRORS, "status", "rem_access_err"));
    }

    /**
     * The observing recorder on both ends: the connect and a send are children of the client's observation,
     * the accept a child of the observation the server was bound under; a refused connect is a failed
     * observation whose error is the meters' error.
     */
    @Test
    void connectAcceptAndASendAreObservedUnderTheApplicationsObservations() throws Exception {
        TestObservationRegistry observations = TestObservationRegistry.create();
        RdmaRecorder observed = RdmaObservations.recorder(observations, recorder);
        ConnectionOptions options = options().toBuilder().recorder(observed).build();
        Observation serving = Observation.start("app.serving", observations);
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                        AcceptFilter.ACCEPT_ALL)
                .contextWrite(Context.of(RdmaObservations.PARENT_KEY, serving)).block(T);
        List<RdmaConnection> accepted = new CopyOnWriteArrayList<>();
        Disposable sub = server.connections().subscribe(c -> {
            accepted.add(c);
            c.receive().subscribe(RdmaMessage::release, e -> { });
        });
        Observation request = Observation.start("app.request", observations);
        RdmaConnection client = RdmaConnection.connect(server.address(), options)
                .flatMap(c -> c.send(ByteBuffer.wrap(new byte[] {1, 2, 3}))
                        .transform(RdmaObservations.operation(observations, "send", c))
                        .thenReturn(c))
                .contextWrite(Context.of(RdmaObservations.PARENT_KEY, request))
                .block(T);
        InetSocketAddress refusedAt;
        try {
            eventually("accepted connections", 1, accepted::size);
            String serverAt = server.address().getAddress().getHostAddress() + ":" + server.address().getPort();
            String clientAt = client.localAddress().getAddress().getHostAddress() + ":" + client.localAddress().getPort();
            TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo(RdmaObservations.CONNECT).that()
                    .hasParentObservationEqualTo(request)
                    .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.SUCCESS)
                    .hasLowCardinalityKeyValue(RdmaTags.ERROR, RdmaTags.NONE)
                    .hasHighCardinalityKeyValue(RdmaTags.REMOTE, serverAt)
                    .hasBeenStopped();
            TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo(RdmaObservations.ACCEPT).that()
                    .hasParentObservationEqualTo(serving)
                    .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.SUCCESS)
                    .hasHighCardinalityKeyValue(RdmaTags.REMOTE, clientAt)
                    .hasBeenStopped();
            TestObservationRegistryAssert.assertThat(observations)
                    .hasObservationWithNameEqualTo(RdmaObservations.OPERATION).that()
                    .hasParentObservationEqualTo(request)
                    .hasLowCardinalityKeyValue(RdmaTags.OP, "send")
                    .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.SUCCESS)
                    .hasBeenStopped();
            assertEquals(1, count(MicrometerRdmaRecorder.ACCEPTS, "outcome", "success"), "the meters still count");
            refusedAt = server.address();
        } finally {
            client.disposeNow(T);
            sub.dispose();
            server.disposeNow(T);
        }
        request.stop();
        serving.stop();

        // Nobody listens there any more: the connect is refused, observed as a failure like the meters count it.
        Observation retry = Observation.start("app.retry", observations);
        StepVerifier.create(RdmaConnection.connect(refusedAt, options)
                        .contextWrite(Context.of(RdmaObservations.PARENT_KEY, retry)))
                .expectError(RdmaCmException.class).verify(T);
        retry.stop();
        Awaitility.await("the refused connect's observation").atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> TestObservationRegistryAssert.assertThat(observations)
                        .hasNumberOfObservationsWithNameEqualTo(RdmaObservations.CONNECT, 2));
        TestObservationRegistryAssert.assertThat(observations).hasAnObservation(o -> o
                .hasNameEqualTo(RdmaObservations.CONNECT)
                .hasParentObservationEqualTo(retry)
                .hasLowCardinalityKeyValue(RdmaTags.OUTCOME, RdmaTags.FAILURE)
                .hasError()
                .hasLowCardinalityKeyValueWithKey(RdmaTags.ERROR));
        double failures = registry.get(MicrometerRdmaRecorder.CONNECTS).tag("outcome", "failure").counters().stream()
                .filter(c -> c.count() > 0)
                .peek(c -> TestObservationRegistryAssert.assertThat(observations).hasAnObservation(o -> o
                        .hasNameEqualTo(RdmaObservations.CONNECT)
                        .hasLowCardinalityKeyValue(RdmaTags.ERROR, c.getId().getTag(RdmaTags.ERROR))))
                .mapToDouble(c -> c.count()).sum();
        assertEquals(1, failures, "one failed connect, its error the same in the meter and the observation");
    }

    /**
     * A recorder built without a registry, bound as a MeterBinder after a filter, with its own buckets,
     * measures a real connection: the filter applied, every latency lands in the configured buckets, and
     * both sides' disconnect is timed.
     */
    @Test
    void aBoundRecorderWithItsOwnBucketsMeasuresARealConnection() throws Exception {
        SimpleMeterRegistry bound = new SimpleMeterRegistry();
        bound.config().meterFilter(io.micrometer.core.instrument.config.MeterFilter
                .denyNameStartsWith("rdmaflux.multicast"));
        MicrometerRdmaRecorder own = MicrometerRdmaRecorder.builder()
                .operationLatencyBuckets(Duration.ofNanos(50_000), Duration.ofMillis(5))
                .connectStepBuckets(Duration.ofMillis(100))
                .build();
        own.bindTo(bound);
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().recorder(own).build();
        RdmaServer server = server(options);
        List<RdmaConnection> accepted = new CopyOnWriteArrayList<>();
        Disposable sub = server.connections().subscribe(c -> {
            accepted.add(c);
            c.receive().subscribe(RdmaMessage::release, e -> { });
        });
        RdmaConnection client = RdmaConnection.connect(server.address(), options).block(T);
        int messages = 20;
        try {
            client.send(Flux.range(0, messages).map(i -> ByteBuffer.wrap(new byte[] {i.byteValue()}))).block(T);
            Timer send = bound.get(MicrometerRdmaRecorder.OPERATION_LATENCY).tag(RdmaTags.OP, "send").timer();
            assertEquals(messages, send.count());
            var buckets = send.takeSnapshot().histogramCounts();
            assertEquals(2, buckets.length, "the configured boundaries, not the defaults");
            assertEquals(50_000, buckets[0].bucket(java.util.concurrent.TimeUnit.NANOSECONDS), 1e-6);
            assertTrue(bound.find("rdmaflux.multicast.groups").meters().isEmpty(), "the filter applied");
        } finally {
            client.disposeNow(T);
            sub.dispose();
            server.disposeNow(T);
        }
        for (RdmaConnection c : accepted) {
            c.onDispose().block(T);
        }
        Timer disconnect = bound.get(MicrometerRdmaRecorder.CONNECT_STEP).tag(RdmaTags.STEP, "disconnect").timer();
        Awaitility.await("both sides' disconnect").atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertEquals(2, disconnect.count()));
        assertEquals(1, disconnect.takeSnapshot().histogramCounts().length);
        assertEquals(0, registry.get(MicrometerRdmaRecorder.MESSAGES_SENT).counter().count(),
                "nothing went to the other test registry");
    }
}
