package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.util.DefaultPayload;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import rdmaflux.testing.RdmaTestEnv;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * rdmaflux's defaults run on rdmaflux's own threads: with Reactor's shared schedulers shut down by someone
 * else ({@code Schedulers.shutdownNow()}, which rsocket-test's kit calls per transport pair), and shut down
 * again while work is under way, connections with default options connect, exchange small and large messages,
 * time a step out, deliver a delay on their default scheduler, carry an RSocket request-response, and loops
 * report their end.
 */
class SharedSchedulersIT {
    private static final Duration T = Duration.ofSeconds(90);

    @Test
    void defaultConnectionsExchangeSmallAndLargeMessages() {
        Schedulers.shutdownNow();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address()).block(T);
            // Above the receive buffer: the large-message path, whose copy and registration run on a worker.
            byte[] large = new byte[ConnectionOptions.defaults().bufferSize() * 8 + 1];
            for (int i = 0; i < large.length; i++) {
                large[i] = (byte) i;
            }
            List<byte[]> sent = List.of("small".getBytes(), large, "after".getBytes());
            Flux<byte[]> replies = c.receiveBytes().take(sent.size()).cache();
            replies.subscribe();
            Schedulers.shutdownNow();
            c.send(Flux.fromIterable(sent).map(ByteBuffer::wrap)).block(T);
            List<byte[]> got = replies.collectList().block(T);
            assertEquals(sent.size(), got.size());
            for (int i = 0; i < sent.size(); i++) {
                assertArrayEquals(sent.get(i), got.get(i), "message " + i);
            }
            c.disposeNow(T);
        }
    }

    @Test
    void aDelayOnTheDefaultSchedulerFiresAcrossAShutdown() {
        AtomicReference<String> firedOn = new AtomicReference<>();
        Mono<Long> delay = Mono.delay(Duration.ofMillis(500), ConnectionOptions.defaults().scheduler())
                .doOnNext(x -> firedOn.set(Thread.currentThread().getName()));
        StepVerifier.create(delay)
                .then(Schedulers::shutdownNow) // while the delay waits
                .expectNext(0L).expectComplete().verify(T);
        assertTrue(firedOn.get().startsWith("rdmaflux-signal-"), firedOn.get());
    }

    @Test
    void aStepTimesOut() {
        Schedulers.shutdownNow();
        Duration connect = Duration.ofSeconds(2);
        // The server's filter never decides and its accept timeout is far off: only the client's timer can end it.
        RdmaServer undecided = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.builder().timeout(Step.ACCEPT, Duration.ofSeconds(60)).build(),
                AcceptFilter.async((peer, data) -> Mono.never())).block(T);
        EchoServer echo = new EchoServer(ConnectionOptions.defaults());
        try {
            ConnectionOptions options = ConnectionOptions.defaults().toBuilder().timeout(Step.CONNECT, connect).build();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            StepVerifier.create(RdmaConnection.connect(undecided.address(), options)
                            .doOnSubscribe(s -> Schedulers.shutdownNow()))
                    .consumeErrorWith(failure::set).verify(T);
            RdmaCmException.StepTimeout timeout = assertInstanceOf(RdmaCmException.StepTimeout.class, failure.get());
            assertEquals(Step.CONNECT, timeout.step());
            // Another server still takes connections: the failure was the step's, not the loops'. With a
            // handshake bound for a loaded machine: 2 s is the step that had to time out, not this one's.
            RdmaConnection c = RdmaConnection.connect(echo.address(), options.toBuilder().timeout(Step.CONNECT, T)
                    .build()).block(T);
            c.disposeNow(T);
        } finally {
            undecided.disposeNow(T);
            echo.close();
        }
    }

    @Test
    void anRSocketRequestResponseWithTheTransportsDefaults() {
        Schedulers.shutdownNow();
        RSocket responder = new RSocket() {
            @Override
            public Mono<Payload> requestResponse(Payload p) {
                Payload reply = DefaultPayload.create("re: " + p.getDataUtf8());
                p.release();
                return Mono.just(reply);
            }
        };
        RdmaCloseableServer server = RSocketServer.create(SocketAcceptor.with(responder))
                .bind(RdmaServerTransport.create(new InetSocketAddress(RdmaTestEnv.address(), 0))).block(T);
        try {
            RSocket client = RSocketConnector.create().connect(RdmaClientTransport.create(server.address())).block(T);
            Schedulers.shutdownNow();
            StepVerifier.create(client.requestResponse(DefaultPayload.create("ping")).map(p -> {
                String data = p.getDataUtf8();
                p.release();
                return data;
            })).expectNext("re: ping").expectComplete().verify(T);
            client.dispose();
            StepVerifier.create(client.onClose()).expectComplete().verify(T);
        } finally {
            server.dispose();
            StepVerifier.create(server.onClose()).expectComplete().verify(T);
        }
    }

    @Test
    void loopsReportTheirEnd() {
        RdmaLoops loops = RdmaLoops.create("rdmaflux-it-schedulers", 1);
        // One completion loop in a cold JVM on a slow machine: the default 10 s handshake was seen to run out.
        ConnectionOptions options = ConnectionOptions.builder().loops(loops).timeout(Step.CONNECT, T)
                .timeout(Step.ACCEPT, T).build();
        try (EchoServer echo = new EchoServer(options)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), options).block(T);
            c.send(ByteBuffer.wrap(new byte[options.bufferSize() * 2])).block(T);
            c.disposeNow(T);
        }
        Mono<Void> end = loops.onDispose();
        Schedulers.shutdownNow(); // after the wait for the end was made, before it ends
        loops.dispose();
        long disposed = System.nanoTime();
        StepVerifier.create(end).expectComplete().verify(T);
        System.out.printf("loops ended %d ms after their disposal%n", (System.nanoTime() - disposed) / 1_000_000);
        for (Thread t : ((Loops) loops).threads()) {
            assertFalse(t.isAlive(), t.getName() + " still alive");
        }
    }
}
