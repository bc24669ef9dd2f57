package rdmaflux.cm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.rsocket.DuplexConnection;
import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.Resume;
import io.rsocket.resume.InMemoryResumableFramesStore;
import io.rsocket.transport.ClientTransport;
import io.rsocket.util.DefaultPayload;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.testing.RemoteProcess;
import rdmaflux.testing.SandboxHosts;
import reactor.util.retry.Retry;

/**
 * RSocket resumption over RDMA across a wire: this JVM on host 1 requests a stream of {@link #COUNT}
 * sequence-numbered payloads from an RSocket server with resumption on host 2 ({@link HostsPeerMain}
 * {@code rsocket}). Run with {@code RDMAFLUX_IT_HOSTS=2} (or 3) {@code scripts/it}; boots host 2 again if an
 * earlier class crashed it.
 *
 * <p>A cut wire fails the RDMA connection (the queue pair's retries run out) and RSocket resumes the session
 * over a new one once the wire is back; a killed server leaves nothing to resume, and the stream ends once the
 * client's session expires.
 */
class RSocketResumeHostsIT {
    static final int COUNT = 100_000;
    /**
     * How long either side keeps a session without a connection: a 5 s cut, the failure's detection (about 1 s,
     * see {@link #options()}) and reconnects at emulated speed, with room to spare; also the bound on a killed
     * server's error.
     */
    static final Duration SESSION = Duration.ofSeconds(60);
    /**
     * The client's session when its server is killed: nothing can resume, so the session only bounds how long the
     * stream waits before it fails; a short one keeps the test short (the cross-host lane is the run's longest).
     */
    private static final Duration KILLED_SESSION = Duration.ofSeconds(15);
    /** The client's demand: items it asks for at a time (Reactor's {@code limitRate}). */
    private static final int DEMAND = 1_000;
    /** Every frame of the stream fits (about 10 bytes each): resumption never finds a frame gone. */
    static final int STORE_BYTES = 16 * 1024 * 1024;
    /** A peer JVM under emulation: tens of seconds to main at the reference speed, stretched on a slower machine. */
    private static final Duration STARTUP = RdmaTestEnv.scaled(Duration.ofSeconds(180));
    private static final Duration CUT = Duration.ofSeconds(5);
    /**
     * The stream's first tenth, about a minute at emulated speed on a loaded machine: well inside JUnit's per-test
     * timeout (300 s at the reference speed), so a stalled stream fails with its state, not with the timeout.
     */
    private static final Duration TENTH = RdmaTestEnv.scaled(Duration.ofMinutes(2));
    /** The stream at emulated speed, plus the cut and a resumption. */
    private static final Duration STREAM = RdmaTestEnv.scaled(Duration.ofMinutes(6));

    /**
     * The transport's options on both sides: an ACK timeout of 2^15 x 4.096 us (134 ms; 0.9 s with the 6
     * retries, twice that on Soft-RoCE under load) fails a connection well inside the 5 s cut, where the
     * default (0.5 s, 3.8 s with retries) could ride it out and resumption would not be tested. The handshake
     * bounds are {@link CrossHostsIT#SLOW_HANDSHAKE}'s.
     */
    static ConnectionOptions options() {
        ConnectionOptions.Builder b = RdmaClientTransport.defaultOptions().toBuilder().ackTimeout(15);
        for (Step step : List.of(Step.ADDRESS, Step.ROUTE, Step.CONNECT, Step.ACCEPT)) {
            b.timeout(step, CrossHostsIT.SLOW_HANDSHAKE.timeout(step));
        }
        return b.build();
    }

    /**
     * Resumption as both sides configure it: frames acknowledged by a keepalive leave the store.
     *
     * @param side names the store in RSocket's logs
     */
    static Resume resume(String side) {
        return resume(side, SESSION);
    }

    private static Resume resume(String side, Duration session) {
        return new Resume().sessionDuration(session).cleanupStoreOnKeepAlive()
                .storeFactory(token -> new InMemoryResumableFramesStore(side, token, STORE_BYTES))
                .retry(Retry.backoff(Long.MAX_VALUE, Duration.ofMillis(500)).maxBackoff(Duration.ofSeconds(2)));
    }

    /** The payload carrying {@code seq}. */
    static Payload item(int seq) {
        return DefaultPayload.create(ByteBuffer.allocate(Integer.BYTES).putInt(0, seq));
    }

    @BeforeEach
    void hostTwoIsUp() {
        SandboxHosts.require(2);
        if (SandboxHosts.crashed(2)) {
            SandboxHosts.boot(2, STARTUP);
        }
    }

    @Test
    void aStreamResumesAfterAWireCutWithNothingLostDuplicatedOrReordered() {
        try (RemoteProcess peer = SandboxHosts.startJava(2, HostsPeerMain.class, "rsocket")) {
            Client client = Client.connect(peer, SESSION);
            client.awaitItems(COUNT / 10, TENTH);
            SandboxHosts.link(2, false);
            long cut = System.nanoTime();
            int atCut = client.received.get();
            try {
                // The cut lasts 5 s and at least until the RDMA connection failed: resumption must have work.
                await().atMost(CUT.plusSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() ->
                        client.closed.get() > 0 && System.nanoTime() - cut >= CUT.toNanos());
            } finally {
                SandboxHosts.link(2, true);
            }
            System.out.printf("wire cut at %d ms, item %d, for %d ms; the connection failed after %d ms%n",
                    (cut - client.start) / 1_000_000, atCut, (System.nanoTime() - cut) / 1_000_000,
                    (client.firstClose.get() - cut) / 1_000_000);
            assertTrue(atCut < COUNT, "the stream was still running when the wire was cut");
            Throwable end = client.awaitEnd(STREAM);
            if (end != null) {
                // The cause's trace tells which side found the fault: an error frame from the server has none.
                throw new AssertionError("the stream failed at item " + client.received.get() + " ("
                        + client.connections.get() + " connections: " + client.lives + "): " + end, end);
            }
            assertEquals(COUNT, client.received.get(), "every item once, in order (each was checked on arrival)");
            assertTrue(client.connections.get() >= 2, "resumed over a new connection: " + client.connections.get());
            System.out.printf("resumed: %d connections, stream of %d done; %s%n", client.connections.get(), COUNT,
                    client.lives);
            client.rsocket.dispose();
        }
    }

    @Test
    void aKilledServerEndsTheStreamWithATypedErrorOnceTheSessionExpires() {
        try (RemoteProcess peer = SandboxHosts.startJava(2, HostsPeerMain.class, "rsocket")) {
            Client client = Client.connect(peer, KILLED_SESSION);
            client.awaitItems(COUNT / 10, TENTH);
            peer.kill();
            long killed = System.nanoTime();
            Throwable end = client.awaitEnd(KILLED_SESSION.plus(STARTUP));
            Duration took = Duration.ofNanos(System.nanoTime() - killed);
            System.out.printf("server killed at item %d: the stream ended after %d ms with %s%n",
                    client.received.get(), took.toMillis(), end);
            assertNotNull(end, "the stream failed");
            assertEquals(java.nio.channels.ClosedChannelException.class, end.getClass(), end.toString());
            assertTrue(took.compareTo(KILLED_SESSION.plus(RdmaTestEnv.scaled(Duration.ofSeconds(30)))) < 0,
                    "ended within the session's duration: " + took);
            client.rsocket.dispose();
        }
    }

    /** A resumable RSocket client of host 2's server, its stream of {@link #COUNT} items under way. */
    private static final class Client {
        final AtomicInteger received = new AtomicInteger();
        final AtomicInteger connections = new AtomicInteger();
        final AtomicInteger closed = new AtomicInteger();
        final AtomicLong firstClose = new AtomicLong();
        /** Each connection's life, for the report: how many a cut took, and whether resumed ones lasted. */
        final java.util.Queue<String> lives = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final long start = System.nanoTime();
        final CompletableFuture<Throwable> ended = new CompletableFuture<>();
        final AtomicReference<String> disorder = new AtomicReference<>();
        RSocket rsocket;

        static Client connect(RemoteProcess peer, Duration session) {
            int port = Integer.parseInt(peer.awaitLine(l -> l.startsWith("PORT "), STARTUP).substring(5).trim());
            Client c = new Client();
            RdmaClientTransport rdma = RdmaClientTransport.create(
                    new InetSocketAddress(SandboxHosts.address(2), port), options());
            ClientTransport counting = () -> rdma.connect().map(c::track);
            // RSocket's keepalive carries the acknowledged position that empties the frame store.
            c.rsocket = RSocketConnector.create().resume(resume("client", session))
                    .keepAlive(Duration.ofSeconds(1), session)
                    .connect(counting).block(STARTUP);
            // Demand in batches, as a client of a slow link asks: with unbounded demand the responder emits the
            // whole stream at once on its completion loop, which under emulation on a loaded machine outlasts
            // the 15 s keepalive lifetime of the killed-server test, and the connection is dropped before its
            // first item.
            c.rsocket.requestStream(item(COUNT)).limitRate(DEMAND)
                    .subscribe(c::check, c.ended::complete, () -> c.ended.complete(null));
            return c;
        }

        /** {@return the connection, its frame stream's end noted: the cause RSocket does not pass on} */
        private DuplexConnection track(DuplexConnection connection) {
            int n = connections.incrementAndGet();
            long up = System.nanoTime();
            AtomicReference<Object> why = new AtomicReference<>("disposed");
            Runnable closed = () -> {
                lives.add("connection " + n + ": up at " + (up - start) / 1_000_000 + " ms, closed after "
                        + (System.nanoTime() - up) / 1_000_000 + " ms at item " + received.get() + " (" + why + ")");
                closedNow();
            };
            connection.onClose().subscribe(null, e -> closed.run(), closed);
            return new DuplexConnection() {
                @Override
                public void sendFrame(int streamId, ByteBuf frame) {
                    connection.sendFrame(streamId, frame);
                }

                @Override
                public void sendErrorAndClose(io.rsocket.RSocketErrorException e) {
                    why.set("closed by RSocket: " + e);
                    connection.sendErrorAndClose(e);
                }

                @Override
                public reactor.core.publisher.Flux<ByteBuf> receive() {
                    return connection.receive().doOnError(e -> why.compareAndSet("disposed", e.toString()));
                }

                @Override
                public io.netty.buffer.ByteBufAllocator alloc() {
                    return connection.alloc();
                }

                @Override
                public java.net.SocketAddress remoteAddress() {
                    return connection.remoteAddress();
                }

                @Override
                public reactor.core.publisher.Mono<Void> onClose() {
                    return connection.onClose();
                }

                @Override
                public void dispose() {
                    why.compareAndSet("disposed", "disposed by RSocket");
                    connection.dispose();
                }

                @Override
                public boolean isDisposed() {
                    return connection.isDisposed();
                }
            };
        }

        private void closedNow() {
            firstClose.compareAndSet(0, System.nanoTime());
            closed.incrementAndGet();
        }

        /** An item in order is counted; anything else ends the stream with the first disorder. */
        private void check(Payload p) {
            ByteBuf data = p.sliceData();
            int seq = data.readableBytes() == Integer.BYTES ? data.getInt(0) : -1;
            p.release();
            int expected = received.get();
            if (seq != expected) {
                disorder.compareAndSet(null, "item " + seq + " where " + expected + " was due");
                ended.complete(new AssertionError(disorder.get()));
                return;
            }
            received.incrementAndGet();
        }

        /**
         * Waits for {@code n} items; a stream that ends first fails at once with its end, where waiting out the
         * bound would hide why.
         */
        void awaitItems(int n, Duration within) {
            try {
                await().atMost(within).until(() -> received.get() >= n || ended.isDone());
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                throw new AssertionError("the stream stalled at item " + received.get() + " of " + n + " awaited, "
                        + connections.get() + " connections: " + lives, e);
            }
            if (received.get() < n) {
                throw new AssertionError("the stream ended at item " + received.get() + " of " + n + " awaited: "
                        + ended.join() + "; " + lives);
            }
        }

        /** {@return how the stream ended: null when it completed} */
        Throwable awaitEnd(Duration within) {
            try {
                Throwable t = ended.get(within.toMillis(), TimeUnit.MILLISECONDS);
                if (t instanceof AssertionError a) {
                    throw a;
                }
                return t;
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("the stream did not end within " + within + " (" + received.get()
                        + " items)", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            } catch (java.util.concurrent.ExecutionException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** For {@link HostsPeerMain}: a responder whose request-stream sends the asked number of items. */
    static RSocket responder() {
        return new RSocket() {
            @Override
            public reactor.core.publisher.Flux<Payload> requestStream(Payload p) {
                int n = p.sliceData().getInt(0);
                p.release();
                return reactor.core.publisher.Flux.range(0, n).map(RSocketResumeHostsIT::item);
            }
        };
    }
}
