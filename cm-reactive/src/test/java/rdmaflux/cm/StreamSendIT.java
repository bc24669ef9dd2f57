package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.RdmaTestEnv;
import reactor.core.Disposable;
import reactor.core.Fuseable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * {@link RdmaConnection#send(org.reactivestreams.Publisher)} and its variants with a release callback (a content
 * function or a {@link MessageWriter}): in order across the eager limit, a failing
 * source fails the send (what it had posted arrives, what waited is withdrawn) and leaves the connection
 * usable, a cancel stops the stream at a prefix; with a release callback, every message the source emitted
 * is handed back exactly once, whether it was sent, withdrawn or arrived after the end.
 */
class StreamSendIT {
    private static final Duration T = Duration.ofMinutes(2);
    private static final ConnectionOptions SMALL = ConnectionOptions.defaults().toBuilder()
            .receiveBuffers(4).sendBuffers(4).build();

    /**
     * A server whose connection's messages are read as sequence numbers (their first 4 bytes). Released at
     * once, or, when {@code hold}, kept until the test takes them (so the sender runs out of credits).
     */
    private static final class Receiver implements AutoCloseable {
        final RdmaServer server;
        final LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<RdmaConnection> accepted = new LinkedBlockingQueue<>();
        final Disposable accepting;

        Receiver(ConnectionOptions options, boolean hold) {
            server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                    AcceptFilter.ACCEPT_ALL).block(T);
            accepting = server.connections().subscribe(c -> {
                accepted.add(c);
                c.receive().subscribe(m -> {
                    if (hold) {
                        inbox.add(m);
                    } else {
                        inbox.add(seq(m));
                    }
                }, e -> { });
            });
        }

        /** The next message's sequence number. */
        int next() throws InterruptedException {
            Object m = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
            assertTrue(m != null, "no message arrived");
            return m instanceof RdmaMessage held ? seq(held) : (Integer) m;
        }

        /** Stops the server and releases the messages still held: the leak check counts any left. */
        @Override
        public void close() {
            accepting.dispose();
            server.disposeNow(T);
            Object m;
            while ((m = inbox.poll()) != null) {
                if (m instanceof RdmaMessage held) {
                    held.release();
                }
            }
        }
    }

    /** The message's sequence number; releases it. */
    private static int seq(RdmaMessage m) {
        try {
            return m.data().get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED.withOrder(
                    java.nio.ByteOrder.BIG_ENDIAN), 0);
        } finally {
            m.release();
        }
    }

    private static ByteBuffer numbered(int seq, int size) {
        ByteBuffer b = ByteBuffer.allocate(Math.max(4, size));
        b.putInt(0, seq);
        return b;
    }

    @Test
    void messagesOfAnySizeArriveInOrder() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            int eager = c.eagerMessageSize();
            List<Integer> sizes = List.of(4, eager, eager + 1, 100, 3 * eager, 4, 65536, 8);
            c.send(Flux.range(0, 400).map(i -> numbered(i, sizes.get(i % sizes.size())))).block(T);
            for (int i = 0; i < 400; i++) {
                assertEquals(i, r.next());
            }
            c.disposeNow(T);
        }
    }

    /**
     * A source that only pushes ({@code hide()} turns Reactor's fusion off) goes the other way through the
     * sender: a message per {@code onNext}, on demand.
     */
    @Test
    void aPushOnlySourceArrivesInOrder() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            int eager = c.eagerMessageSize();
            List<Integer> sizes = List.of(4, eager + 1, 100, 8);
            c.send(Flux.range(0, 200).map(i -> numbered(i, sizes.get(i % sizes.size()))).hide()).block(T);
            for (int i = 0; i < 200; i++) {
                assertEquals(i, r.next());
            }
            c.disposeNow(T);
        }
    }

    /**
     * A synchronous source ({@code Flux.range(..).map(..)}) is polled in runs that leave with one doorbell,
     * and only a run's last send (or every 16th) is signaled: a completion retires the unsignaled sends
     * before it. So the sender's connection handles far fewer completions than it sends messages (one per
     * message before), and every message still arrives, in order, and the stream completes.
     */
    @Test
    void aSynchronousSourceLeavesInRunsWithOneCompletionEach() throws InterruptedException {
        AtomicLong completions = new AtomicLong();
        RdmaRecorder counting = new RdmaRecorder() {
            @Override
            public void pollBatch(int n) {
                completions.addAndGet(n);
            }
        };
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().recorder(counting).build();
        int messages = 2000;
        try (Receiver r = new Receiver(ConnectionOptions.defaults(), false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), options).block(T);
            c.send(Flux.range(0, messages).map(i -> numbered(i, 16))).block(T);
            for (int i = 0; i < messages; i++) {
                assertEquals(i, r.next());
            }
            // The rest are the receiver's credit returns, about one per half window.
            assertTrue(completions.get() < messages / 2, "completions on the sender: " + completions.get()
                    + " for " + messages + " messages");
            c.send(ByteBuffer.allocate(8)).block(T); // a single send is its own batch's end: it completes
            c.disposeNow(T);
        }
    }

    @Test
    void aFailingSourceFailsTheSendAndTheConnectionGoesOn() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            IllegalStateException boom = new IllegalStateException("the source failed");
            StepVerifier.create(c.send(Flux.range(0, 10).map(i -> numbered(i, 16)).concatWith(Flux.error(boom))))
                    .expectErrorSatisfies(e -> assertEquals(boom, e)).verify(T);
            // What was posted before the failure arrives, in order; what still waited was withdrawn.
            assertAPrefixArrived(c, r, 10);
            c.disposeNow(T);
        }
    }

    /**
     * After a failed stream: sends message 77 on the same connection (it must still work) and checks that what
     * arrived before it is a prefix of the failed stream, in order, of at most {@code max} messages.
     */
    private static void assertAPrefixArrived(RdmaConnection c, Receiver r, int max) throws InterruptedException {
        c.send(Flux.just(numbered(77, 16))).block(T);
        int expect = 0;
        int seq;
        while ((seq = r.next()) != 77) {
            assertEquals(expect++, seq);
        }
        assertTrue(expect <= max, "more arrived than was posted before the failure: " + expect);
    }

    /**
     * The receiver holds every message, so after 4 credits the rest of the stream waits queued; the cancel
     * withdraws what waits and asks the source for nothing more: what arrives is a prefix, in order.
     */
    @Test
    void cancellingAStreamStopsItAtAPrefix() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, true)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            Disposable sending = c.send(Flux.range(0, 1000).map(i -> numbered(i, 64))).subscribe();
            long deadline = System.nanoTime() + T.toNanos();
            while (r.inbox.size() < 4 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            sending.dispose();
            int got = 0;
            Object m;
            while ((m = r.inbox.poll(2, TimeUnit.SECONDS)) != null) { // releasing returns credits: no more come
                assertEquals(got, seq((RdmaMessage) m));
                got++;
            }
            assertTrue(got >= 4 && got < 1000, "a prefix of the stream arrived: " + got);
            c.send(ByteBuffer.allocate(8)).block(T); // the connection is still usable
            c.disposeNow(T);
        }
    }

    /** A message that owns its memory, as a pooled buffer would: released once, never twice. */
    private record Owned(int seq, ByteBuffer bytes) {
    }

    /** Counts each message's releases; the test then checks every emitted one was released exactly once. */
    private static final class Releases {
        final Map<Integer, AtomicInteger> counts = new ConcurrentHashMap<>();

        void release(Owned m) {
            counts.computeIfAbsent(m.seq(), k -> new AtomicInteger()).incrementAndGet();
        }

        /** Waits until {@code emitted} messages were released, then checks none was released twice. */
        void awaitExactlyOnce(int emitted) throws InterruptedException {
            long deadline = System.nanoTime() + T.toNanos();
            while (counts.size() < emitted && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(emitted, counts.size(), "messages released");
            counts.forEach((seq, n) -> assertEquals(1, n.get(), "releases of message " + seq));
        }
    }

    @Test
    void everyMessageIsReleasedOnceAfterItsSend() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            int eager = c.eagerMessageSize();
            List<Integer> sizes = List.of(4, eager + 1, 100, 3 * eager);
            Releases releases = new Releases();
            c.send(Flux.range(0, 200).map(i -> new Owned(i, numbered(i, sizes.get(i % sizes.size())))),
                    Owned::bytes, releases::release).block(T);
            for (int i = 0; i < 200; i++) {
                assertEquals(i, r.next());
            }
            releases.awaitExactlyOnce(200);
            c.disposeNow(T);
        }
    }

    /**
     * A held receiver leaves most of the stream queued when it is cancelled: the withdrawn messages, the
     * posted ones and any the source still emits after the cancel all come back exactly once.
     */
    @Test
    void aCancelledStreamReleasesWhatItHeld() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, true)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            Releases releases = new Releases();
            AtomicInteger emitted = new AtomicInteger();
            Disposable sending = c.send(Flux.range(0, 1000).map(i -> new Owned(i, numbered(i, 64)))
                    .doOnNext(m -> emitted.incrementAndGet()), Owned::bytes, releases::release).subscribe();
            cancelOnceFourArrived(r, sending);
            assertTrue(emitted.get() >= 4 && emitted.get() < 1000, "emitted " + emitted.get());
            releases.awaitExactlyOnce(emitted.get());
            c.disposeNow(T);
        }
    }

    /**
     * A source that offers Reactor's ASYNC fusion (a unicast sink, as the RSocket transport's frame queue) is
     * polled in runs, each posted together: in order across the eager limit, every message released once.
     */
    @Test
    void aFusedSourceArrivesInOrderAndIsReleasedOnce() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            int eager = c.eagerMessageSize();
            List<Integer> sizes = List.of(4, eager, eager + 1, 100, 3 * eager, 4, 8);
            Releases releases = new Releases();
            Sinks.Many<Owned> source = Sinks.many().unicast().onBackpressureBuffer();
            assertTrue(source.asFlux() instanceof Fuseable, "the test's source must offer fusion");
            Mono<Void> sending = c.send(source.asFlux(), Owned::bytes, releases::release).cache();
            sending.subscribe(null, e -> { });
            for (int i = 0; i < 300; i++) {
                source.emitNext(new Owned(i, numbered(i, sizes.get(i % sizes.size()))), Sinks.EmitFailureHandler.FAIL_FAST);
            }
            source.emitComplete(Sinks.EmitFailureHandler.FAIL_FAST);
            sending.block(T);
            for (int i = 0; i < 300; i++) {
                assertEquals(i, r.next());
            }
            releases.awaitExactlyOnce(300);
            c.disposeNow(T);
        }
    }

    /**
     * Writes an {@link Owned} message in two pieces, its sequence number and then the rest of its bytes, as a
     * framing layer writes a header and a body; fails on the message numbered {@code failOn}.
     */
    private static MessageWriter<Owned> inPieces(int failOn) {
        return new MessageWriter<>() {
            @Override
            public int length(Owned m) {
                return m.bytes().remaining();
            }

            @Override
            public void write(Owned m, ByteBuffer target) {
                if (m.seq() == failOn) {
                    throw new IllegalStateException("the writer failed on " + failOn);
                }
                target.putInt(m.seq());
                target.put(m.bytes().duplicate().position(4));
            }
        };
    }

    /**
     * {@link RdmaConnection#send(org.reactivestreams.Publisher, MessageWriter, java.util.function.Consumer)}:
     * small messages written into their send buffers when posted (some after waiting for a credit), large
     * ones into a buffer of their own; all arrive whole and in order, each released once.
     */
    @Test
    void aWritersMessagesArriveWholeInOrderAndAreReleasedOnce() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, true)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            int eager = c.eagerMessageSize();
            List<Integer> sizes = List.of(4, eager, eager + 1, 100, 3 * eager, 5, 8);
            Releases releases = new Releases();
            Sinks.Many<Owned> source = Sinks.many().unicast().onBackpressureBuffer();
            Mono<Void> sending = c.send(source.asFlux(), inPieces(-1), releases::release).cache();
            sending.subscribe(null, e -> { });
            for (int i = 0; i < 300; i++) {
                ByteBuffer b = numbered(i, sizes.get(i % sizes.size()));
                b.put(b.limit() - 1, (byte) i); // the last byte too, so a short or shifted copy shows
                source.emitNext(new Owned(i, b), Sinks.EmitFailureHandler.FAIL_FAST);
            }
            source.emitComplete(Sinks.EmitFailureHandler.FAIL_FAST);
            for (int i = 0; i < 300; i++) {
                Object m = r.inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertTrue(m instanceof RdmaMessage, "message " + i + " did not arrive");
                RdmaMessage got = (RdmaMessage) m;
                int size = Math.max(4, sizes.get(i % sizes.size()));
                assertEquals(size, got.length(), "length of message " + i);
                assertEquals((byte) i, got.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, size - 1),
                        "last byte of message " + i);
                assertEquals(i, seq(got)); // releases it: the sender's credit comes back
            }
            sending.block(T);
            releases.awaitExactlyOnce(300);
            c.disposeNow(T);
        }
    }

    /**
     * A writer that throws as its message is posted (under the connection's lock) fails the stream with its
     * exception; what was posted before arrives in order, every message is released once, and the connection
     * goes on.
     */
    @Test
    void aWriterThatFailsWhenPostedFailsTheStreamAndTheConnectionGoesOn() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, false)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            Releases releases = new Releases();
            AtomicInteger emitted = new AtomicInteger();
            StepVerifier.create(c.send(Flux.range(0, 20).map(i -> new Owned(i, numbered(i, 16)))
                            .doOnNext(m -> emitted.incrementAndGet()), inPieces(10), releases::release))
                    .expectErrorSatisfies(e -> assertEquals("the writer failed on 10", e.getMessage()))
                    .verify(T);
            assertAPrefixArrived(c, r, 10);
            releases.awaitExactlyOnce(emitted.get());
            c.disposeNow(T);
        }
    }

    /** A fused source cancelled while most of it waits: what was queued, posted or emitted later is released once. */
    @Test
    void aCancelledFusedSourceReleasesWhatItHeld() throws InterruptedException {
        try (Receiver r = new Receiver(SMALL, true)) {
            RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
            Releases releases = new Releases();
            Sinks.Many<Owned> source = Sinks.many().unicast().onBackpressureBuffer();
            Disposable sending = c.send(source.asFlux(), Owned::bytes, releases::release).subscribe(null, e -> { });
            int emitted = 0;
            for (; emitted < 200; emitted++) {
                source.emitNext(new Owned(emitted, numbered(emitted, 64)), Sinks.EmitFailureHandler.FAIL_FAST);
            }
            cancelOnceFourArrived(r, sending);
            // The sink's own queue is the sender's to empty: every message comes back through release.
            releases.awaitExactlyOnce(emitted);
            c.disposeNow(T);
        }
    }

    /** The peer closes the connection under a stream: what was queued or in flight is released with the failure. */
    @Test
    void aConnectionClosedByItsPeerReleasesEverything() throws InterruptedException {
        Receiver r = new Receiver(SMALL, true); // closed at the end: its connection is disposed in the middle
        RdmaConnection c = RdmaConnection.connect(r.server.address(), SMALL).block(T);
        Releases releases = new Releases();
        AtomicInteger emitted = new AtomicInteger();
        Disposable sending = c.send(Flux.range(0, 1000).map(i -> new Owned(i, numbered(i, 64)))
                .doOnNext(m -> emitted.incrementAndGet()), Owned::bytes, releases::release).subscribe(null, e -> { });
        long deadline = System.nanoTime() + T.toNanos();
        while (r.inbox.size() < 4 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        r.accepted.poll(T.toSeconds(), TimeUnit.SECONDS).dispose(); // the peer goes away holding its messages
        deadline = System.nanoTime() + T.toNanos();
        while (!sending.isDisposed() && System.nanoTime() < deadline) { // the stream failed: no more is emitted
            Thread.sleep(20);
        }
        assertTrue(sending.isDisposed(), "the stream did not fail with its connection");
        releases.awaitExactlyOnce(emitted.get());
        assertTrue(emitted.get() >= 4, "emitted " + emitted.get());
        sending.dispose();
        c.disposeNow(T);
        r.close();
    }

    /**
     * Cancels {@code sending} once the held receiver has four messages, then releases what it holds and what
     * still arrives: the posted sends complete on release.
     */
    private static void cancelOnceFourArrived(Receiver r, Disposable sending) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        while (r.inbox.size() < 4 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        sending.dispose();
        Object m;
        while ((m = r.inbox.poll(2, TimeUnit.SECONDS)) != null) {
            seq((RdmaMessage) m);
        }
    }
}
