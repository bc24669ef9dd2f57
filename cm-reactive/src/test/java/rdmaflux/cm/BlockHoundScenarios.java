package rdmaflux.cm;

import rdmaflux.cm.internal.LoopsBlockHoundIntegration;
import rdmaflux.cm.internal.loop.LoopThread;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import io.rsocket.RSocket;
import io.rsocket.util.DefaultPayload;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.testing.RdmaTestEnv;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingMethod;
import reactor.blockhound.integration.BlockHoundIntegration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * What {@link BlockHoundIT} runs in a JVM of its own (it says why): BlockHound installed as an application
 * installs it, with the integrations {@link ServiceLoader} finds (rdmaflux's, Reactor's, BlockHound's own),
 * then traffic of every kind on the device, after each of which no blocking call may have been reported on a
 * loop thread; and a {@code block()} of the application's on each kind of loop thread, which fails at once.
 *
 * <p>Not an {@code *IT}: scripts/it must not run it in its own JVM. Reports are collected, not thrown, so a
 * report cannot break a loop and hide what follows it; those on other threads (Reactor's, RSocket's) are
 * printed, not checked.
 */
class BlockHoundScenarios {
    private static final Duration T = Duration.ofMinutes(2);
    private static final String REFUSAL = "block()/blockFirst()/blockLast() are blocking, which is not supported in thread ";
    /** Blocking calls reported on rdmaflux's loop threads since the last check: thread, method, where. */
    private static final List<String> ON_LOOPS = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void install() {
        BlockHound.builder().loadIntegrations().blockingMethodCallback(BlockHoundScenarios::reported).install();
        assertTrue(ServiceLoader.load(BlockHoundIntegration.class).stream()
                .anyMatch(p -> p.type() == LoopsBlockHoundIntegration.class), "BlockHound finds rdmaflux's integration");
    }

    private static void reported(BlockingMethod m) {
        Thread t = Thread.currentThread();
        String where = Arrays.stream(new Throwable().getStackTrace()).limit(16).map(String::valueOf)
                .collect(Collectors.joining("\n    at ", "\n    at ", ""));
        String report = t.getName() + ": " + m + where;
        if (t instanceof LoopThread) {
            ON_LOOPS.add(report);
        } else {
            System.out.println("blocking call off rdmaflux's loops (not checked): " + report);
        }
    }

    /** {@return the reports on loop threads since the last call, forgotten} */
    private static List<String> takeReports() {
        List<String> r = List.copyOf(ON_LOOPS);
        ON_LOOPS.removeAll(r);
        return r;
    }

    @AfterEach
    void noBlockingCallOnALoopThread() {
        assertEquals(List.of(), takeReports(), "blocking calls BlockHound reported on rdmaflux's loop threads");
    }

    /** Messages of 1 B to 64 KiB, the 64 KiB ones above the 8 KiB buffers (so by rendezvous), echoed. */
    @ParameterizedTest
    @EnumSource(ConnectionOptions.CompletionMode.class)
    void anEcho(ConnectionOptions.CompletionMode mode) {
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().completionMode(mode).build();
        int n = 200;
        try (EchoServer echo = new EchoServer(options)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), options).block(T);
            echoed(c, IntStream.range(0, n).map(MessagingIT::size).toArray());
            c.disposeNow(T);
        }
    }

    /** A message of 1 MiB, 128 times the receive buffers: the rendezvous path, both ways (the echo sends it back). */
    @Test
    void aMessageLargerThanTheReceiveBuffers() {
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address()).block(T);
            assertTrue(c.eagerMessageSize() < Payloads.MIB, "eager size " + c.eagerMessageSize());
            echoed(c, new int[] {17, Payloads.MIB, 4096, Payloads.MIB});
            c.disposeNow(T);
        }
    }

    /** Sends message {@code i} of {@code sizes[i]} bytes for each i and checks every byte of the echoes. */
    private static void echoed(RdmaConnection c, int[] sizes) {
        AtomicInteger next = new AtomicInteger();
        Mono<Long> verified = c.receive().take(sizes.length).doOnNext(m -> {
            try {
                int seq = next.getAndIncrement();
                Payloads.verify(m.data(), seq, sizes[seq]);
            } finally {
                m.release();
            }
        }).count().cache();
        verified.subscribe();
        c.send(Flux.range(0, sizes.length).map(i -> Payloads.message(i, sizes[i]))).block(T);
        assertEquals(sizes.length, verified.block(T));
    }

    @Test
    void aMulticastRoundTrip() throws Exception {
        InetAddress group = InetAddress.getByName("239.1.41.1");
        MulticastOptions options = MulticastOptions.builder().localAddress(RdmaTestEnv.address()).build();
        MulticastMembership m = RdmaMulticast.join(group, options).block(T);
        MulticastSender s = RdmaMulticast.sender(group, options).block(T);
        int n = 20;
        s.send(Flux.range(0, n).map(i -> MulticastTestSupport.payload(i, 100))).block(T);
        StepVerifier.create(m.datagrams().take(n).map(MulticastTestSupport::seq))
                .expectNextSequence(IntStream.range(0, n).boxed().toList()).expectComplete().verify(T);
        m.dispose();
        s.dispose();
        m.onDispose().then(s.onDispose()).block(T);
    }

    /** Request-response over the RSocket transport: small payloads, and one above the eager size. */
    @Test
    void anRSocketRequestResponse() {
        RdmaCloseableServer server = RSocketIT.serve(new RSocketIT.Responder(), ConnectionOptions.defaults());
        RSocket client = RSocketIT.connect(server, ConnectionOptions.defaults());
        Flux.range(0, 100).concatMap(i -> client.requestResponse(DefaultPayload.create("ping " + i)).map(RSocketIT::text))
                .as(StepVerifier::create)
                .expectNextSequence(IntStream.range(0, 100).mapToObj(i -> "ping " + i).toList())
                .expectComplete().verify(T);
        String big = "x".repeat(256 * 1024);
        assertEquals(big, client.requestResponse(DefaultPayload.create(big)).map(RSocketIT::text).block(T));
        RSocketIT.close(client, server);
    }

    /**
     * The application's {@code block()} on each kind of loop thread fails at once with Reactor's message: on
     * the CM loop and the completion loop (its operators there, with {@code Schedulers.immediate()}), and on a
     * signal thread (the default scheduler). Before the loops were {@code NonBlocking}, the first two hung
     * their loop.
     */
    @Test
    void aBlockInAnOperatorOnALoopFailsAtOnce() {
        ConnectionOptions onTheLoops = ConnectionOptions.defaults().toBuilder().scheduler(Schedulers.immediate()).build();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            // connect's result, on the CM loop of connecting clients
            AtomicReference<RdmaConnection> made = new AtomicReference<>();
            IllegalStateException onCm = assertThrows(IllegalStateException.class,
                    () -> RdmaConnection.connect(echo.address(), onTheLoops).doOnNext(c -> {
                        made.set(c);
                        Mono.delay(Duration.ofMillis(10)).block();
                    }).block(T));
            assertEquals(REFUSAL + "rdmaflux-cm", onCm.getMessage());
            made.get().disposeNow(T);

            RdmaConnection c = RdmaConnection.connect(echo.address(), onTheLoops).block(T);
            refusedOnReceive(c, "rdmaflux-completion-");
            c.disposeNow(T);

            RdmaConnection d = RdmaConnection.connect(echo.address()).block(T);
            refusedOnReceive(d, "rdmaflux-signal-");
            d.disposeNow(T);
        }
    }

    /** A {@code block()} in {@code receive()}'s operator fails the stream at once on a thread named {@code prefix}N. */
    private static void refusedOnReceive(RdmaConnection c, String prefix) {
        StepVerifier.create(c.receive().map(m -> {
                    m.release();
                    return Mono.delay(Duration.ofMillis(10)).block();
                }))
                .then(() -> c.send(ByteBuffer.wrap(new byte[] {1})).subscribe())
                .expectErrorSatisfies(e -> {
                    String message = assertInstanceOf(IllegalStateException.class, e).getMessage();
                    assertTrue(message.matches(java.util.regex.Pattern.quote(REFUSAL + prefix) + "\\d+"), message);
                })
                .verify(T);
    }

    /**
     * The loops are policed: a blocking call in the application's operator on the completion loop is reported.
     * Without this, the other scenarios' "no report" would hold as well if BlockHound saw nothing at all.
     */
    @Test
    void aBlockingCallOnALoopIsReported() {
        ConnectionOptions onTheLoops = ConnectionOptions.defaults().toBuilder().scheduler(Schedulers.immediate()).build();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), onTheLoops).block(T);
            Mono<Long> slept = c.receive().take(1).doOnNext(m -> {
                m.release();
                Resources.sleep(1);
            }).count().cache();
            slept.subscribe();
            c.send(ByteBuffer.wrap(new byte[] {1})).block(T);
            assertEquals(1L, slept.block(T));
            c.disposeNow(T);
        }
        List<String> reports = takeReports();
        assertEquals(1, reports.size(), String.join("\n", reports));
        assertTrue(reports.getFirst().startsWith("rdmaflux-completion-"), reports.getFirst());
        assertTrue(reports.getFirst().contains("java.lang.Thread.sleepNanos0"), reports.getFirst());
    }
}
