package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.frame.decoder.PayloadDecoder;
import io.rsocket.util.ByteBufPayload;
import io.rsocket.util.DefaultPayload;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;

import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import rdmaflux.testing.RdmaTestEnv;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * RSocket over rdmaflux on the real device: every interaction model, frames above the eager size, a slow
 * subscriber, a server that goes away with a stream open, and many clients on one server.
 */
class RSocketIT {
    private static final Duration T = Duration.ofMinutes(2);

    /** Echoes requests; streams {@code n} numbered items for a request whose data is {@code n}. */
    static final class Responder implements RSocket {
        final AtomicInteger fireAndForgets = new AtomicInteger();
        final CountDownLatch tenFired = new CountDownLatch(10);

        @Override
        public Mono<Void> fireAndForget(Payload p) {
            p.release();
            fireAndForgets.incrementAndGet();
            tenFired.countDown();
            return Mono.empty();
        }

        @Override
        public Mono<Payload> requestResponse(Payload p) {
            // A copy: the request's frame (and so its receive buffer) is released at once.
            Payload reply = DefaultPayload.create(p);
            p.release();
            return Mono.just(reply);
        }

        @Override
        public Flux<Payload> requestStream(Payload p) {
            int n = Integer.parseInt(p.getDataUtf8());
            p.release();
            return Flux.range(0, n).map(i -> DefaultPayload.create("item " + i));
        }

        @Override
        public Flux<Payload> requestChannel(org.reactivestreams.Publisher<Payload> payloads) {
            return Flux.from(payloads).map(p -> {
                Payload echo = DefaultPayload.create("echo " + p.getDataUtf8());
                p.release();
                return echo;
            });
        }
    }

    static RdmaCloseableServer serve(RSocket responder, ConnectionOptions options) {
        return RSocketServer.create(SocketAcceptor.with(responder)).payloadDecoder(PayloadDecoder.ZERO_COPY)
                .bind(RdmaServerTransport.create(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                        AcceptFilter.ACCEPT_ALL))
                .block(T);
    }

    static RSocket connect(RdmaCloseableServer server, ConnectionOptions options) {
        return RSocketConnector.create().payloadDecoder(PayloadDecoder.ZERO_COPY)
                .connect(RdmaClientTransport.create(server.address(), options)).block(T);
    }

    static void close(RSocket client, RdmaCloseableServer server) {
        client.dispose();
        client.onClose().block(T);
        server.dispose();
        server.onClose().block(T);
    }

    @Test
    void everyInteractionModel() throws InterruptedException {
        Map<String, Integer> baseline = Resources.baseline();
        Responder responder = new Responder();
        RdmaCloseableServer server = serve(responder, ConnectionOptions.defaults());
        RSocket client = connect(server, ConnectionOptions.defaults());

        client.requestResponse(DefaultPayload.create("ping", "meta")).map(p -> {
            try {
                return p.getDataUtf8() + "/" + p.getMetadataUtf8();
            } finally {
                p.release();
            }
        }).as(StepVerifier::create).expectNext("ping/meta").expectComplete().verify(T);

        client.requestStream(DefaultPayload.create("1000")).map(RSocketIT::text)
                .as(StepVerifier::create).expectNextCount(999).expectNext("item 999").expectComplete().verify(T);

        client.requestChannel(Flux.range(0, 500).map(i -> DefaultPayload.create(Integer.toString(i))))
                .map(RSocketIT::text).index().doOnNext(t -> assertEquals("echo " + t.getT1(), t.getT2()))
                .as(StepVerifier::create).expectNextCount(500).expectComplete().verify(T);

        Flux.range(0, 10).concatMap(i -> client.fireAndForget(DefaultPayload.create("f" + i)))
                .as(StepVerifier::create).expectComplete().verify(T);
        assertTrue(responder.tenFired.await(T.toSeconds(), TimeUnit.SECONDS), "fire-and-forgets arrived");
        assertEquals(10, responder.fireAndForgets.get());

        close(client, server);
        Resources.awaitBaseline(baseline, T, "after the RSocket client and server closed");
    }

    /** Frames below, at and above the eager size (8 KiB buffers), up to 8 MiB: by rendezvous, checksummed. */
    @Test
    void framesOfAnySize() {
        RdmaCloseableServer server = serve(new Responder(), ConnectionOptions.defaults());
        RSocket client = connect(server, ConnectionOptions.defaults());
        int eager = ConnectionOptions.defaults().bufferSize();
        for (int size : new int[] {0, 1, eager - 64, eager, eager + 1, 65536, 1 << 20, 8 << 20}) {
            byte[] data = new byte[size];
            new java.util.Random(size).nextBytes(data);
            long want = crc(Unpooled.wrappedBuffer(data));
            long got = client.requestResponse(ByteBufPayload.create(Unpooled.wrappedBuffer(data)))
                    .map(p -> {
                        try {
                            return crc(p.sliceData());
                        } finally {
                            p.release();
                        }
                    }).block(T);
            assertEquals(want, got, "checksum of a " + size + "-byte payload");
        }
        close(client, server);
    }

    /**
     * A subscriber that takes 4 items at a time and pauses: RSocket's request-n and the connection's
     * credits stop the server, so nothing is lost, no RNR happens, and the client's receive buffers bound
     * what is held.
     */
    @Test
    void slowSubscriberOnRequestStream() {
        ConnectionOptions small = ConnectionOptions.defaults().toBuilder().receiveBuffers(4).sendBuffers(4).build();
        RdmaCloseableServer server = serve(new Responder(), small);
        RSocket client = connect(server, small);
        Map<String, Long> before = HwCounters.read();
        List<String> got = client.requestStream(DefaultPayload.create("200")).map(RSocketIT::text)
                .limitRate(4).delayElements(Duration.ofMillis(5)).collectList().block(T);
        assertEquals(200, got.size());
        for (int i = 0; i < 200; i++) {
            assertEquals("item " + i, got.get(i));
        }
        Map<String, Long> delta = HwCounters.delta(before, HwCounters.read());
        delta.forEach((k, v) -> {
            if (k.contains("rnr")) {
                assertEquals(0L, v, "RNR counter " + k + " moved: " + delta);
            }
        });
        close(client, server);
    }

    /**
     * A keepalive's answer goes ahead of a stream's backlog: the responder queues {@code items} frames at once
     * (unbounded demand, emitted off the completion loop, which stays free to read keepalives) and the
     * requester takes about one a millisecond, so the last is sent many seconds after the first, well past the
     * keepalive's lifetime. Sent behind the backlog, the answers would come too late and the requester would
     * drop the connection ("No keep-alive acks"), failing the stream.
     */
    @Test
    void keepaliveAnswersGoAheadOfAStreamsBacklog() {
        int items = 10_000;
        Duration lifetime = Duration.ofSeconds(3);
        RSocket offLoop = new RSocket() {
            @Override
            public Flux<Payload> requestStream(Payload p) {
                return new Responder().requestStream(p).subscribeOn(Schedulers.parallel());
            }
        };
        RdmaCloseableServer server = serve(offLoop, ConnectionOptions.defaults());
        RSocket client = RSocketConnector.create().payloadDecoder(PayloadDecoder.ZERO_COPY)
                .keepAlive(Duration.ofMillis(200), lifetime)
                .connect(RdmaClientTransport.create(server.address())).block(T);
        long start = System.nanoTime();
        client.requestStream(DefaultPayload.create(Integer.toString(items))).map(RSocketIT::text)
                .doOnNext(item -> {
                    // A slow consumer, on the thread that delivers the frames: the backlog drains this fast.
                    long until = System.nanoTime() + 1_000_000;
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                })
                .as(StepVerifier::create).expectNextCount(items - 1).expectNext("item " + (items - 1))
                .expectComplete().verify(RdmaTestEnv.scaled(Duration.ofMinutes(3)));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertTrue(took.compareTo(lifetime.multipliedBy(2)) > 0,
                "the backlog outlasted the keepalive's lifetime, or nothing was tested: " + took);
        close(client, server);
    }

    /** The server side closes its connection with a stream open: the client's stream fails, it does not hang. */
    @Test
    void serverClosingWithAStreamOpenFailsTheClientStream() {
        AtomicReference<RSocket> serverSide = new AtomicReference<>();
        RdmaCloseableServer server = RSocketServer.create((setup, sending) -> {
            serverSide.set(sending);
            return Mono.just(new RSocket() {
                @Override
                public Flux<Payload> requestStream(Payload p) {
                    p.release();
                    return Flux.interval(Duration.ofMillis(10)).map(i -> DefaultPayload.create("tick " + i));
                }
            });
        }).bind(RdmaServerTransport.create(new InetSocketAddress(RdmaTestEnv.address(), 0))).block(T);
        RSocket client = connect(server, ConnectionOptions.defaults());
        AtomicInteger ticks = new AtomicInteger();
        client.requestStream(DefaultPayload.create("go")).doOnNext(p -> {
            p.release();
            if (ticks.incrementAndGet() == 20) {
                serverSide.get().dispose(); // the server's RSocket closes the connection under the stream
            }
        }).as(StepVerifier::create).thenConsumeWhile(x -> true)
                // RSocket reports the connection's end to open streams as its ConnectionErrorException (or
                // ClosedChannelException when the frame stream ended first).
                .expectErrorSatisfies(e -> assertTrue(e instanceof io.rsocket.exceptions.ConnectionErrorException
                        || e instanceof java.nio.channels.ClosedChannelException, e.toString()))
                .verify(T);
        assertTrue(ticks.get() >= 20, "ticks before the close: " + ticks.get());
        // A requester's onClose ends with the error that closed it; what matters is that it ends.
        client.onClose().onErrorComplete().block(T);
        server.dispose();
        server.onClose().block(T);
    }

    /**
     * The server's JVM is killed (SIGKILL) with a stream open: the client's stream fails with the closed
     * connection (RSocket's contract: {@code ClosedChannelException}, or rdmaflux's typed error when the
     * connection failed rather than closed), its RSocket closes, and its connection's resources are freed.
     */
    @Test
    void peerKilledMidStream() {
        Map<String, Integer> baseline = Resources.baseline();
        try (PeerProcess peer = PeerProcess.start("rsocket")) {
            // The peer's JVM has just started: its first accept loads RSocket's and Netty's classes, which on a
            // slow machine takes longer than the default connect timeout.
            ConnectionOptions patient = RdmaClientTransport.defaultOptions().toBuilder()
                    .timeout(Step.CONNECT, RdmaTestEnv.scaled(Duration.ofSeconds(20))).build();
            RSocket client = RSocketConnector.create().connect(RdmaClientTransport.create(peer.address(), patient))
                    .block(T);
            AtomicInteger ticks = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            client.requestStream(DefaultPayload.create("go")).doOnNext(p -> {
                p.release();
                if (ticks.incrementAndGet() == 20) {
                    // Not on the transport's thread: frames keep arriving while the JVM dies.
                    Mono.fromRunnable(peer::kill).subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic())
                            .subscribe();
                }
            }).as(StepVerifier::create).thenConsumeWhile(x -> true)
                    .expectErrorSatisfies(failure::set).verify(T);
            Throwable e = failure.get();
            boolean typed = false;
            for (Throwable c = e; c != null; c = c.getCause()) {
                typed |= c instanceof java.nio.channels.ClosedChannelException || c instanceof RdmaCmException
                        || c instanceof io.rsocket.exceptions.ConnectionErrorException;
            }
            assertTrue(typed, "the stream's error says the connection ended: " + e);
            client.onClose().onErrorComplete().block(T);
        }
        Resources.awaitBaseline(baseline, T, "after the RSocket peer was killed");
    }

    /** 100 RSocket clients on one server, each with 20 request-responses in flight. */
    @Test
    void aHundredClientsOnOneServer() {
        Map<String, Integer> baseline = Resources.baseline();
        RdmaCloseableServer server = serve(new Responder(), ConnectionOptions.defaults());
        List<RSocket> clients = Flux.range(0, 100)
                .flatMap(i -> RSocketConnector.create().connect(RdmaClientTransport.create(server.address()))
                        .retryWhen(RdmaRetry.reconnect(10, Duration.ofMillis(200))), 20)
                .collectList().block(T);
        assertEquals(100, clients.size());
        long answered = Flux.range(0, clients.size())
                .flatMap(c -> Flux.range(0, 20).flatMap(i -> clients.get(c)
                        .requestResponse(DefaultPayload.create(c + ":" + i)).map(p -> {
                            try {
                                assertEquals(c + ":" + i, p.getDataUtf8());
                                return 1;
                            } finally {
                                p.release();
                            }
                        })))
                .count().block(Duration.ofMinutes(5));
        assertEquals(2000, answered);
        clients.forEach(RSocket::dispose);
        Flux.fromIterable(clients).flatMap(RSocket::onClose).then().block(T);
        server.dispose();
        server.onClose().block(T);
        Resources.awaitBaseline(baseline, T, "after 100 RSocket clients closed");
    }

    static String text(Payload p) {
        try {
            return p.getDataUtf8();
        } finally {
            p.release();
        }
    }

    private static long crc(ByteBuf b) {
        CRC32C c = new CRC32C();
        c.update(b.nioBuffer());
        return c.getValue();
    }
}
