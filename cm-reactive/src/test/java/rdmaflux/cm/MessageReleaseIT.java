package rdmaflux.cm;

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
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import reactor.core.Disposable;

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
     * goes back once per release.
     */
    @Test
    void aRecycledMessageIsItsBufferAndComesBackWithTheNextMessage() throws InterruptedException {
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
