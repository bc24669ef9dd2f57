package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.testing.RdmaTestEnv;

/** Faults and bad input: every failure is typed, prompt, and leaves no native object behind. */
class FaultsIT {
    private static final Duration T = Duration.ofSeconds(60);
    /** A cancelled connect's slot: a connection delivered after it is closed by the consumer. */
    private static final Object ABANDONED = new Object();

    private static Throwable connectFailure(InetSocketAddress to, ConnectionOptions options) {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        StepVerifier.create(RdmaConnection.connect(to, options))
                .consumeErrorWith(failure::set)
                .verify(T);
        return failure.get();
    }

    @Test
    void connectToAPortWithoutListenerIsRejectedPromptly() {
        Map<String, Integer> baseline = Resources.baseline();
        // A port that surely has no listener: bind one, note the port, stop it.
        RdmaServer s = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0)).block(T);
        InetSocketAddress nobody = s.address();
        s.disposeNow(T);
        Duration connectTimeout = Duration.ofSeconds(20);
        ConnectionOptions options = ConnectionOptions.builder().timeout(Step.CONNECT, connectTimeout).build();
        long start = System.nanoTime();
        Throwable e = connectFailure(nobody, options);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        RdmaCmException.Rejected r = assertInstanceOf(RdmaCmException.Rejected.class, e);
        assertEquals(Step.CONNECT, r.step());
        assertEquals(RdmaCmException.Rejected.INVALID_SERVICE_ID, r.reason(), r.getMessage());
        // The CM answers with a REJ at once; a timeout-based failure would take the full 20 s.
        assertTrue(took.compareTo(connectTimeout.dividedBy(4)) < 0, "rejection took " + took);
        Resources.awaitBaseline(baseline, T, "after a rejected connect");
    }

    @Test
    void connectToAnUnroutableAddressFailsWithinTheStepTimeouts() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        // TEST-NET-3 (RFC 5737): no route leads there from the test machine.
        InetSocketAddress unroutable = new InetSocketAddress(InetAddress.getByName("203.0.113.1"), 7471);
        Duration step = Duration.ofSeconds(2);
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().timeout(Step.ADDRESS, step)
                .timeout(Step.ROUTE, step).timeout(Step.CONNECT, step).build();
        long start = System.nanoTime();
        Throwable e = connectFailure(unroutable, options);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertTrue(e instanceof RdmaCmException.AddressError || e instanceof RdmaCmException.RouteError
                || e instanceof RdmaCmException.StepTimeout, "unexpected failure " + e);
        // At most the three steps' timeouts, plus scheduling slack under emulation.
        assertTrue(took.compareTo(step.multipliedBy(3).plusSeconds(5)) < 0, "failure took " + took);
        Resources.awaitBaseline(baseline, T, "after an unroutable connect");
    }

    @Test
    void rejectionCarriesTheServersPrivateData() {
        Map<String, Integer> baseline = Resources.baseline();
        byte[] reason = "go away: full".getBytes(StandardCharsets.UTF_8);
        byte[] hello = "hi".getBytes(StandardCharsets.UTF_8);
        AtomicReference<byte[]> seen = new AtomicReference<>();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.defaults(), (peer, data) -> {
                    seen.set(data);
                    return AcceptFilter.Decision.reject(reason);
                }).block(T);
        try {
            Throwable e = connectFailure(server.address(), ConnectionOptions.builder().privateData(hello).build());
            RdmaCmException.Rejected r = assertInstanceOf(RdmaCmException.Rejected.class, e);
            assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, r.reason(), r.getMessage());
            byte[] data = r.privateData();
            assertTrue(data.length >= reason.length, "reject data too short: " + Arrays.toString(data));
            assertArrayEquals(reason, Arrays.copyOf(data, reason.length));
            // The filter saw exactly the client's application data: no rdmaflux header, and none of
            // the CM's zero padding (the header carries the length).
            assertArrayEquals(hello, seen.get());
        } finally {
            server.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after a rejection");
    }

    @Test
    void aServerOutOfDirectMemoryRejectsTheConnectionItCannotHoldAndKeepsServing() {
        Map<String, Integer> baseline = Resources.baseline();
        // Room for one connection's buffers (about 0.55 MiB at the defaults), not for two.
        try (PeerProcess peer = PeerProcess.start("echo", "-XX:MaxDirectMemorySize=800k")) {
            Map<String, Integer> withPeer = Resources.baseline();
            RdmaConnection first = RdmaConnection.connect(peer.address(), PeerMain.OPTIONS).block(T);
            java.util.concurrent.LinkedBlockingQueue<Object> inbox = new java.util.concurrent.LinkedBlockingQueue<>();
            first.receiveBytes().subscribe(inbox::add, inbox::add);
            first.send(utf8("one")).block(T);
            assertEquals("one", new String(Inbox.take(inbox, T), StandardCharsets.UTF_8));
            // The server cannot allocate the second one's buffers: it rejects that request instead of
            // letting an OutOfMemoryError escape its CM loop and leave the request unanswered.
            Throwable e = connectFailure(peer.address(), PeerMain.OPTIONS);
            assertInstanceOf(RdmaCmException.Rejected.class, e, String.valueOf(e));
            first.send(utf8("one again")).block(T);
            assertEquals("one again", new String(Inbox.take(inbox, T), StandardCharsets.UTF_8));
            first.disposeNow(T);
            // Once the server has closed its side too, that side's buffers are garbage, and the JVM
            // collects before it refuses direct memory: room for a connection again.
            Resources.awaitBaseline(withPeer, T, "after the first connection closed");
            RdmaConnection third = RdmaConnection.connect(peer.address(), PeerMain.OPTIONS).block(T);
            byte[] back = Mono.zip(third.receiveBytes().next(), third.send(utf8("three")).thenReturn(true))
                    .map(t -> t.getT1()).block(T);
            assertEquals("three", new String(back, StandardCharsets.UTF_8));
            third.disposeNow(T);
            assertTrue(peer.isAlive(), "the server process survived");
            Resources.awaitBaseline(withPeer, T, "after the connections to a server short of memory closed");
        }
        Resources.awaitBaseline(baseline, T, "after the server process short of memory ended");
    }

    private static ByteBuffer utf8(String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void sendAfterDisposeFailsWithIllegalState() {
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address()).block(T);
            c.dispose();
            // Right after dispose(), before the close has finished: no send may start any more.
            StepVerifier.create(c.send(ByteBuffer.allocate(8))).expectError(IllegalStateException.class).verify(T);
            c.onDispose().block(T);
            StepVerifier.create(c.send(ByteBuffer.allocate(8))).expectError(IllegalStateException.class).verify(T);
            StepVerifier.create(c.fetchAndAdd(new RemoteBuffer(0, 8, 1), 1))
                    .expectError(IllegalStateException.class).verify(T);
            assertThrows(IllegalStateException.class,
                    () -> c.register(Arena.global().allocate(64), AccessFlags.LOCAL_WRITE));
        }
    }

    @Test
    void aMessageLargerThanThePeersBuffersGoesByRdmaRead() {
        ConnectionOptions big = ConnectionOptions.defaults().toBuilder().bufferSize(65536).build();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) { // 8 KiB receive buffers
            RdmaConnection c = RdmaConnection.connect(echo.address(), big).block(T);
            assertEquals(8192, c.eagerMessageSize());
            // One byte over the peer's buffers: a descriptor goes eagerly and the peer reads the message.
            // The echo takes the same way back, as the eager limit is the smaller buffer size of the two.
            Mono<byte[]> reply = c.receiveBytes().next().cache();
            reply.subscribe();
            c.send(Payloads.message(7, 8193)).block(T);
            Payloads.verify(reply.block(T), 7, 8193);
            c.disposeNow(T);
        }
    }

    /** A connection receiving the peer's stream, checking every message. */
    private static final class Receiver {
        final RdmaConnection c;
        final AtomicInteger received = new AtomicInteger();
        final AtomicReference<Object> end = new AtomicReference<>();
        final CountDownLatch ended = new CountDownLatch(1);

        Receiver(RdmaConnection c) {
            this.c = c;
            c.receive().subscribe(m -> {
                try {
                    int seq = received.get();
                    Payloads.verify(m.data(), seq, 1024);
                    received.incrementAndGet();
                } finally {
                    m.release();
                }
            }, e -> {
                end.set(e);
                ended.countDown();
            }, () -> {
                end.set("completed");
                ended.countDown();
            });
        }

        void awaitReceived(int n) {
            long deadline = System.nanoTime() + T.toNanos();
            while (received.get() < n && ended.getCount() > 0 && System.nanoTime() < deadline) {
                Resources.sleep(20);
            }
            assertTrue(received.get() >= n, "received " + received.get() + " of " + n + ", end: " + end.get());
        }
    }

    /**
     * One peer process, three faults: (1) it is frozen (SIGSTOP; its kernel still acknowledges RDMA
     * traffic but nothing answers the disconnect) and we dispose one connection: it must still close
     * within the disconnect timeout; (2) it is thawed and keeps streaming on the other connection,
     * to which we also send more than it has credits for (it never reads); (3) it is killed (SIGKILL):
     * receive() and the sends waiting for credits end with typed errors within seconds, and with
     * nobody calling dispose(), every native object of both connections is gone.
     */
    @Test
    void peerProcessFrozenThenKilledMidStream() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        Duration disconnectTimeout = Duration.ofSeconds(3);
        ConnectionOptions options = ConnectionOptions.builder().timeout(Step.DISCONNECT, disconnectTimeout).build();
        Receiver survivor;
        Receiver frozen;
        AtomicInteger sent = new AtomicInteger();
        AtomicReference<Throwable> sendEnd = new AtomicReference<>();
        CountDownLatch sendEnded = new CountDownLatch(1);
        long killedAt;
        try (PeerProcess peer = PeerProcess.start("stream")) {
            survivor = new Receiver(RdmaConnection.connect(peer.address(), options).block(T));
            frozen = new Receiver(RdmaConnection.connect(peer.address(), options).block(T));
            // The peer never reads: after the 32 credits it granted, our sends wait.
            Flux.range(0, 1000).flatMapSequential(i -> survivor.c.send(Payloads.message(i, 1024))
                            .doOnSuccess(v -> sent.incrementAndGet()), 16)
                    .subscribe(null, e -> {
                        sendEnd.set(e);
                        sendEnded.countDown();
                    }, sendEnded::countDown);
            survivor.awaitReceived(100);
            frozen.awaitReceived(100);

            signal("STOP", peer.pid());
            Resources.sleep(500);
            long disposing = System.nanoTime();
            frozen.c.dispose();
            frozen.c.onDispose().block(T);
            Duration closeTook = Duration.ofNanos(System.nanoTime() - disposing);
            ConnectionState last = frozen.c.states().blockLast(T);
            System.out.printf("frozen peer: dispose finished after %d ms in %s, receive() ended with %s%n",
                    closeTook.toMillis(), last, frozen.end.get());
            assertTrue(last.isTerminal(), "state after dispose: " + last);
            assertTrue(closeTook.compareTo(disconnectTimeout.plusSeconds(10)) < 0, "dispose took " + closeTook);
            await(frozen.ended, "the frozen connection's receive() to end");

            signal("CONT", peer.pid());
            int before = survivor.received.get();
            survivor.awaitReceived(before + 100); // the thawed peer streams on
            killedAt = System.nanoTime();
            peer.kill();
        }
        await(survivor.ended, "receive() to end after the peer was killed");
        Duration took = Duration.ofNanos(System.nanoTime() - killedAt);
        Object e = survivor.end.get();
        // docs/api.md, "Closing": a peer that disappears without closing ends receive() with Disconnected.
        assertInstanceOf(RdmaCmException.Disconnected.class, e, "end of receive(): " + e);
        assertTrue(took.compareTo(Duration.ofSeconds(20)) < 0, "receive() ended only after " + took);
        // The sends the dead peer had no credit for fail, typed, too.
        await(sendEnded, "the pending sends to fail");
        // ... and pending operations fail with that same exception.
        assertInstanceOf(RdmaCmException.Disconnected.class, sendEnd.get(), "end of the sends: " + sendEnd.get());
        assertTrue(sent.get() <= PeerMain.OPTIONS.receiveBuffers(), "sends completed without credit: " + sent.get());
        System.out.printf("peer killed after %d messages; receive() ended %d ms later with %s; %d sends completed, "
                + "the rest failed with %s%n", survivor.received.get(), took.toMillis(), e, sent.get(), sendEnd.get());
        survivor.c.onDispose().block(T); // the connection cleaned up after itself, without dispose()
        assertInstanceOf(ConnectionState.Failed.class, survivor.c.states().blockLast(T));
        // A send after the failure fails with it (docs/api.md, "Closing"), not with a generic IllegalStateException.
        StepVerifier.create(survivor.c.send(ByteBuffer.allocate(8)))
                .expectError(RdmaCmException.Disconnected.class).verify(T);
        // Nobody called dispose() on the survivor: the failure alone freed both processes' objects.
        Resources.awaitBaseline(baseline, T, "after the peer process was killed");
        survivor.c.dispose();
    }

    private static void signal(String signal, long pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        assertEquals(0, kill.waitFor(), "kill -" + signal);
    }

    @Test
    void cancellingConnectWhileTheServerDecidesReleasesEverything() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        CountDownLatch deciding = new CountDownLatch(1);
        CountDownLatch cancelled = new CountDownLatch(1);
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.defaults(), (peer, data) -> {
                    deciding.countDown();
                    try {
                        cancelled.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return AcceptFilter.Decision.accept(); // accept a request whose client is gone
                }).block(T);
        AtomicReference<Object> outcome = new AtomicReference<>();
        try {
            Disposable d = RdmaConnection.connect(server.address()).subscribe(outcome::set, outcome::set);
            // The client is now CONNECTING: it has its QP, CQ, MRs and PD.
            await(deciding, "the connect request");
            d.dispose();
            cancelled.countDown();
            Resources.sleep(2000);
            assertEquals(null, outcome.get(), "a cancelled connect must not signal");
        } finally {
            server.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after cancelling a connect in CONNECTING");
    }

    @Test
    void cancellingConnectAtRandomMomentsReleasesEverything() {
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection.connect(echo.address()).block(T).disposeNow(T); // warm-up
            Map<String, Integer> baseline = Resources.baseline();
            java.util.Random random = new java.util.Random(42);
            // Cancel after a random delay in [0, window). The window adapts (grows after a cancel that
            // came first, shrinks after a connect that won), so the cancels cluster around the moment
            // the connect completes, where cancel and success race, and still cover the earlier steps.
            double window = 200;
            int cancelled = 0;
            int attempts = 40;
            for (int i = 0; i < attempts; i++) {
                // dispose() returns while an onNext that beat it may still be running on another thread:
                // whichever of the consumer and this thread takes the slot first decides who closes it.
                AtomicReference<Object> slot = new AtomicReference<>();
                Disposable d = RdmaConnection.connect(echo.address()).subscribe(c -> {
                    if (!slot.compareAndSet(null, c)) {
                        c.dispose();
                    }
                }, e -> { });
                Resources.sleep(random.nextInt((int) window + 1));
                d.dispose();
                if (slot.getAndSet(ABANDONED) instanceof RdmaConnection c) {
                    c.disposeNow(T); // delivered before the cancel: ours to close
                    window *= 0.7;
                } else {
                    cancelled++;
                    window *= 1.4;
                }
            }
            System.out.printf("cancelled %d of %d connects before they completed (final window %.0f ms)%n",
                    cancelled, attempts, window);
            assertTrue(cancelled > 0 && cancelled < attempts, "the cancel points did not spread over the connect");
            Resources.awaitBaseline(baseline, T, "after " + attempts + " connects cancelled at random moments");
        }
    }

    private static void await(CountDownLatch latch, String what) {
        try {
            if (!latch.await(T.toSeconds(), TimeUnit.SECONDS)) {
                fail("timed out waiting for " + what);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
