package rdmaflux.cm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.reactivestreams.Subscription;
import org.junit.jupiter.api.function.Executable;

import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;

/**
 * {@link RdmaMessage} documents that any access after {@link RdmaMessage#release()} throws
 * {@link IllegalStateException}: its buffer is reposted and the next message lands in it. Public API only.
 */
class MessageReleaseIT {
    private static final Duration T = Duration.ofMinutes(1);
    private static final ConnectionOptions OPTIONS = ConnectionOptions.defaults().toBuilder()
            .bufferSize(4096).receiveBuffers(4).sendBuffers(4).build();

    /**
     * One receive buffer: every message lands in the same buffer. A reference kept past its release still
     * fails once the buffer holds a newer message, and its late second release does not give the newer
     * message's buffer back under its reader.
     */
    @Test
    void aStaleMessageFailsAfterItsBufferTookANewerOne() throws InterruptedException {
        ConnectionOptions one = OPTIONS.toBuilder().receiveBuffers(1).build();
        try (EchoServer echo = new EchoServer(one)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), one).block(T);
            BlockingQueue<RdmaMessage> in = new LinkedBlockingQueue<>();
            Disposable receiving = c.receive().subscribe(in::add);
            try {
                c.send(ascii("first")).block(T);
                RdmaMessage stale = in.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(stale, "no echo");
                stale.release();
                c.send(ascii("second")).block(T);
                RdmaMessage newer = in.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(newer, "no second echo: the buffer was not given back");
                assertThrows(IllegalStateException.class, stale::data);
                assertThrows(IllegalStateException.class, stale::length);
                stale.release(); // must not release the newer message
                assertEquals("second", new String(newer.toByteArray(), StandardCharsets.US_ASCII));
                newer.release();
                c.send(ascii("third")).block(T);
                RdmaMessage third = in.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(third, "no third echo");
                assertEquals("third", new String(third.toByteArray(), StandardCharsets.US_ASCII));
                third.release();
            } finally {
                receiving.dispose();
                c.disposeNow(T);
            }
        }
    }

    @Test
    void everyAccessorThrowsAfterReleaseAndReleaseStaysIdempotent() throws InterruptedException {
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), OPTIONS).block(T);
            BlockingQueue<RdmaMessage> in = new LinkedBlockingQueue<>();
            Disposable receiving = c.receive().subscribe(in::add);
            try {
                c.send(ascii("ping")).block(T);
                RdmaMessage m = in.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(m, "no echo");
                assertEquals("ping", new String(m.toByteArray(), StandardCharsets.US_ASCII));
                m.release();
                for (Executable access : List.<Executable>of(m::data, m::length, m::asByteBuffer, m::toByteArray,
                        m::isWriteNotification, m::immediate)) {
                    IllegalStateException e = assertThrows(IllegalStateException.class, access);
                    assertEquals("message used after release()", e.getMessage());
                }
                m.release(); // idempotent: neither throws nor hands the buffer back twice
                // Twice as many messages as receive buffers still round-trip one by one: every buffer was
                // given back exactly once.
                for (int i = 0; i < 8; i++) {
                    echoed(c, in, "m" + i);
                }
            } finally {
                receiving.dispose();
                c.disposeNow(T);
            }
        }
    }

    /**
     * Recycled messages trade the check above for no allocation: the buffer's own object comes back with
     * the next message that lands in it. What stays: a released message fails until then, and every buffer
     * goes back once per release. Only an untracked message is recycled: the leak detector, at paranoid in
     * the integration tests, is turned off here.
     */
    @Test
    void aRecycledMessageIsItsBufferAndComesBackWithTheNextMessage() throws InterruptedException {
        RdmaLeakDetection.Level level = RdmaLeakDetection.level();
        RdmaLeakDetection.level(RdmaLeakDetection.Level.OFF);
        try {
            recycledMessagesComeBack();
        } finally {
            RdmaLeakDetection.level(level);
        }
    }

    private static void recycledMessagesComeBack() throws InterruptedException {
        ConnectionOptions recycled = OPTIONS.toBuilder().recycledMessages(true).build();
        ConnectionOptions one = recycled.toBuilder().receiveBuffers(1).build();
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), one).block(T);
            BlockingQueue<RdmaMessage> in = new LinkedBlockingQueue<>();
            Disposable receiving = c.receive().subscribe(in::add);
            try {
                c.send(ascii("first")).block(T);
                RdmaMessage first = in.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(first, "no echo");
                assertEquals("first", new String(first.toByteArray(), StandardCharsets.US_ASCII));
                first.release();
                IllegalStateException e = assertThrows(IllegalStateException.class, first::data);
                assertEquals("message used after release()", e.getMessage());
                first.release(); // no newer message in the buffer yet: ignored
                // The buffers (one for messages, a few for control messages) take turns; within 8 messages
                // the first one's buffer takes a message again, and its object comes back with it.
                boolean back = false;
                for (int i = 0; i < 8; i++) {
                    back |= echoed(c, in, "m" + i) == first;
                }
                assertTrue(back, "the first message's object came back with a newer message");
            } finally {
                receiving.dispose();
                c.disposeNow(T);
            }
        }
        try (EchoServer echo = new EchoServer(recycled)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), recycled).block(T);
            BlockingQueue<RdmaMessage> in = new LinkedBlockingQueue<>();
            Disposable receiving = c.receive().subscribe(in::add);
            try {
                // Both sides recycle (the echo server receives into recycled messages too); twice as many
                // messages as receive buffers round-trip, so every buffer went back once per release.
                for (int i = 0; i < 8; i++) {
                    echoed(c, in, "m" + i);
                }
            } finally {
                receiving.dispose();
                c.disposeNow(T);
            }
        }
    }

    /**
     * The auto-releasing style: the application releases nothing, and three times as many messages as receive
     * buffers round-trip, so each went back after its {@code onNext}. A message kept past {@code onNext}
     * without {@code retain()} fails loudly (even with recycled messages: each is an object of its own
     * delivery); a retained one stays readable until the application releases it.
     */
    @Test
    void autoReleasedMessagesGoBackByThemselvesUnlessRetained() throws InterruptedException {
        ConnectionOptions recycled = OPTIONS.toBuilder().recycledMessages(true).build();
        int n = 3 * OPTIONS.receiveBuffers();
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection strings = RdmaConnection.connect(echo.address(), recycled).block(T);
            BlockingQueue<String> texts = new LinkedBlockingQueue<>();
            Disposable decoding = strings.receive().asString(StandardCharsets.US_ASCII).subscribe(texts::add);
            RdmaConnection c = RdmaConnection.connect(echo.address(), recycled).block(T);
            BlockingQueue<RdmaMessage> kept = new LinkedBlockingQueue<>();
            Disposable receiving = c.receive().autoRelease().subscribe(m -> {
                String text = new String(m.toByteArray(), StandardCharsets.US_ASCII);
                if (text.equals("retain")) {
                    kept.add(m.retain());
                } else if (text.equals("keep")) {
                    kept.add(m);
                } else if (text.equals("next")) {
                    kept.add(m.retain());
                }
            });
            try {
                for (int i = 0; i < n; i++) {
                    strings.send(ascii("s" + i)).block(T);
                    assertEquals("s" + i, texts.poll(T.toSeconds(), TimeUnit.SECONDS), "no echo: a buffer stayed");
                }
                c.send(ascii("keep")).block(T);
                RdmaMessage stale = kept.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(stale, "no echo");
                // The release follows the onNext that queued the message, on the receiving thread: the next
                // onNext on that thread is what proves it happened.
                c.send(ascii("next")).block(T);
                RdmaMessage next = kept.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(next, "no echo");
                next.release();
                IllegalStateException e = assertThrows(IllegalStateException.class, stale::data);
                assertEquals("message used after release()", e.getMessage());

                c.send(ascii("retain")).block(T);
                RdmaMessage retained = kept.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(retained, "no echo");
                assertEquals("retain", new String(retained.toByteArray(), StandardCharsets.US_ASCII),
                        "a retained message was released after its onNext");
                retained.release();
                assertThrows(IllegalStateException.class, retained::data);
                for (int i = 0; i < n; i++) {
                    c.send(ascii("m" + i)).block(T); // each waits for a credit: the buffers went back
                }
            } finally {
                decoding.dispose();
                receiving.dispose();
                strings.disposeNow(T);
                c.disposeNow(T);
            }
        }
    }

    /**
     * A leak put back: a subscriber that reads each message and drops it without {@code release()}. The
     * connection's receive buffers run out, so its peer cannot send; the leak detector reports every dropped
     * message with the connection and the subscriber's touch, and releases it, so the connection works again.
     */
    @Test
    void droppedMessagesAreReportedWhereTheyWereTouchedAndTheirBuffersComeBack() throws InterruptedException {
        RdmaLeakDetection.Level level = RdmaLeakDetection.level();
        RdmaLeakDetection.level(RdmaLeakDetection.Level.PARANOID);
        int n = OPTIONS.receiveBuffers();
        Queue<RdmaLeak> leaks = new ConcurrentLinkedQueue<>();
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), OPTIONS).block(T);
            String connection = c.localAddress() + " -> " + c.remoteAddress();
            Disposable listening = RdmaLeakDetection.onLeak(l -> {
                if (l.connection().equals(connection)) {
                    leaks.add(l);
                }
            });
            BlockingQueue<String> texts = new LinkedBlockingQueue<>();
            AtomicInteger dropping = new AtomicInteger(n);
            Disposable receiving = c.receive().subscribe(m -> {
                texts.add(new String(m.toByteArray(), StandardCharsets.US_ASCII));
                if (dropping.getAndDecrement() <= 0) {
                    m.release();
                }
            });
            try {
                LeakCheck.expect(n);
                for (int i = 0; i < n; i++) {
                    c.send(ascii("d" + i)).block(T);
                    assertEquals("d" + i, texts.poll(T.toSeconds(), TimeUnit.SECONDS), "no echo");
                }
                // Every buffer is held by a dropped message: what is sent now waits for a credit.
                c.send(ascii("after")).subscribe();
                await().atMost(T).until(() -> {
                    System.gc();
                    return leaks.size() >= n;
                });
                assertEquals("after", texts.poll(T.toSeconds(), TimeUnit.SECONDS),
                        "the detector's release did not give the buffers back");
                assertEquals(n, leaks.size(), "each dropped message is reported once: " + leaks);
                for (RdmaLeak leak : leaks) {
                    assertEquals(2, leak.length());
                    assertTrue(leak.touches().getFirst().contains(
                            "droppedMessagesAreReportedWhereTheyWereTouchedAndTheirBuffersComeBack"), leak.toString());
                }
            } finally {
                listening.dispose();
                receiving.dispose();
                c.disposeNow(T);
                RdmaLeakDetection.level(level);
            }
        }
    }

    /** How a subscriber of {@code receive()} stops while messages are queued for it. */
    enum Ending {
        /** The subscriber cancels. */
        CANCEL(1, 3),
        /** {@code take(2)} has what it wanted and cancels. */
        TAKE(2, 2),
        /** An operator after {@code receive()} throws on its second message. */
        ERROR(2, 2);

        /** How many messages the subscriber requests before the connection holds the rest for it. */
        final int requested;
        /** How many of the rest are surely queued: received before the last one counted. */
        final int queued;

        Ending(int requested, int queued) {
            this.requested = requested;
            this.queued = queued;
        }
    }

    /**
     * Messages the connection received that never reached the subscriber are released when it stops: those
     * queued for it (by {@code receive()}'s own buffering) when it cancels, when {@code take(n)} ends it, or
     * when an operator after {@code receive()} fails. The application's own discard hook sees each of them
     * already released (each message an object of its own, so a released one throws for good).
     */
    @ParameterizedTest
    @EnumSource(Ending.class)
    void messagesQueuedForASubscriberThatStopsAreReleased(Ending ending) throws InterruptedException {
        AtomicInteger received = new AtomicInteger();
        ConnectionOptions options = OPTIONS.toBuilder().recycledMessages(false).recorder(new RdmaRecorder() {
            @Override
            public void messageReceived(int bytes) {
                received.incrementAndGet();
            }
        }).build();
        int sent = OPTIONS.receiveBuffers() + 1;
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), options).block(T);
            Set<RdmaMessage> got = ConcurrentHashMap.newKeySet();
            Queue<RdmaMessage> discarded = new ConcurrentLinkedQueue<>();
            Flux<RdmaMessage> in = c.receive().doOnNext(got::add);
            in = switch (ending) {
                case CANCEL -> in;
                case TAKE -> in.take(2);
                case ERROR -> in.map(m -> {
                    if (got.size() == 2) {
                        throw new IllegalStateException("an operator fails on the second message");
                    }
                    return m;
                });
            };
            BlockingQueue<RdmaMessage> inbox = new LinkedBlockingQueue<>();
            BaseSubscriber<RdmaMessage> subscriber = new BaseSubscriber<>() {
                @Override
                protected void hookOnSubscribe(Subscription s) {
                    s.request(1);
                }

                @Override
                protected void hookOnNext(RdmaMessage m) {
                    inbox.add(m);
                }

                @Override
                protected void hookOnError(Throwable e) {
                    // The ERROR case's end; what matters is what happened to the queued messages.
                }
            };
            in.doOnDiscard(RdmaMessage.class, discarded::add).subscribe(subscriber);
            try {
                for (int i = 0; i < sent; i++) {
                    c.send(ascii("m" + i)).block(T);
                }
                RdmaMessage first = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(first, "no echo");
                first.release(); // its buffer takes the last echo: all of them were received then
                // Counted before it is queued: the ones before it surely are, the last one maybe.
                await().atMost(T).until(() -> received.get() == sent);
                switch (ending) {
                    case CANCEL -> subscriber.cancel();
                    case TAKE -> {
                        subscriber.request(1);
                        RdmaMessage second = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
                        assertNotNull(second, "take(2) did not get its second message");
                        second.release();
                    }
                    case ERROR -> subscriber.request(1);
                }
                // The application's hook may run before rdmaflux's release: wait for both.
                await().atMost(T).untilAsserted(() -> {
                    List<RdmaMessage> queued = discarded.stream().filter(m -> !got.contains(m)).toList();
                    assertTrue(queued.size() >= ending.queued, queued.size() + " queued messages discarded");
                    for (RdmaMessage m : queued) {
                        IllegalStateException e = assertThrows(IllegalStateException.class, m::data,
                                "a queued message was discarded without its release: " + m);
                        assertEquals("message used after release()", e.getMessage());
                    }
                });
                // What reached the operators is the application's to release: in the ERROR case that is
                // the message map threw on, which Reactor drops without a discard. Each message is an
                // object of its own (not recycled), so releasing one already released does nothing.
                got.forEach(RdmaMessage::release);
            } finally {
                subscriber.dispose();
                c.disposeNow(T);
            }
        }
    }

    /**
     * Sends {@code text} and takes its echo: it must come (every buffer went back), hold {@code text}, and
     * is released.
     *
     * @return the released echo, for its identity
     */
    private static RdmaMessage echoed(RdmaConnection c, BlockingQueue<RdmaMessage> in, String text)
            throws InterruptedException {
        c.send(ascii(text)).block(T);
        RdmaMessage r = in.poll(T.toSeconds(), TimeUnit.SECONDS);
        assertNotNull(r, "no echo of " + text + ": a buffer was not given back");
        try {
            assertEquals(text, new String(r.toByteArray(), StandardCharsets.US_ASCII));
        } finally {
            r.release();
        }
        return r;
    }

    private static ByteBuffer ascii(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.US_ASCII));
    }
}
