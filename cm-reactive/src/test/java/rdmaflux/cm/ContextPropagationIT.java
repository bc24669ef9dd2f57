package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.context.ContextRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Hooks;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * A ThreadLocal that the application set before it called {@code connect()}, {@code send()},
 * {@code read()}/{@code write()} or {@code receive()} (an MDC entry, a trace context) is there in its operators
 * after rdmaflux's thread hops, with Reactor's automatic context propagation
 * ({@code Hooks.enableAutomaticContextPropagation()}) and a Micrometer context-propagation accessor for that
 * ThreadLocal, as reactor-netty users have it. Each case also checks that its signal did arrive on one of
 * rdmaflux's threads, not on the caller's, where the value would be there without any propagation; and a control
 * shows that without the hook the value is not there, so the cases can tell.
 */
class ContextPropagationIT {
    private static final Duration T = Duration.ofMinutes(1);
    private static final String KEY = "rdmaflux.test.request";
    private static final ThreadLocal<String> REQUEST = new ThreadLocal<>();

    /** What an operator saw: the ThreadLocal's value and whether it ran on a non-blocking (rdmaflux) thread. */
    record Seen(String value, String thread, boolean nonBlocking) {
        static Seen now() {
            return new Seen(REQUEST.get(), Thread.currentThread().getName(), Schedulers.isInNonBlockingThread());
        }
    }

    private final AtomicReference<Seen> seen = new AtomicReference<>();
    private RdmaServer server;
    private Arena arena;
    private MemorySegment region;

    @BeforeAll
    static void accessor() {
        ContextRegistry.getInstance().registerThreadLocalAccessor(KEY, REQUEST::get, REQUEST::set, REQUEST::remove);
    }

    @AfterAll
    static void noAccessor() {
        ContextRegistry.getInstance().removeThreadLocalAccessor(KEY);
    }

    /**
     * An echo server whose every connection first sends the descriptor of a region it registered for remote
     * access, so that the client can read and write it.
     */
    @BeforeEach
    void server() {
        arena = Arena.ofShared();
        region = arena.allocate(4096, 4096);
        server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), ConnectionOptions.defaults(),
                AcceptFilter.ACCEPT_ALL).block(T);
        server.connections().subscribe(c -> {
            ByteBuffer advert = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
            c.register(region, AccessFlags.REMOTE_ALL).remote().writeTo(advert);
            c.send(advert.flip()).thenMany(c.receive().concatMap(m ->
                    c.send(m.asByteBuffer()).doFinally(s -> m.release()))).subscribe(null, e -> { });
        });
    }

    @AfterEach
    void close() {
        Hooks.disableAutomaticContextPropagation();
        REQUEST.remove();
        server.disposeNow(T);
        arena.close();
    }

    @Test
    void connectSendReadWriteAndReceiveKeepTheCallersThreadLocal() throws InterruptedException {
        Hooks.enableAutomaticContextPropagation();

        REQUEST.set("connect");
        RdmaConnection c = RdmaConnection.connect(server.address()).doOnNext(x -> seen.set(Seen.now())).block(T);
        assertNotNull(c);
        assertPropagated("connect");
        BlockingQueue<Received> inbox = new LinkedBlockingQueue<>();
        // receive() has one subscriber for the connection's life. subscribe() does not capture ThreadLocals by
        // itself, contextCapture() does (block() does with the hook on), for the operators before it: the
        // subscriber after it has its own Context, without them.
        REQUEST.set("receive");
        Disposable receiving = c.receive().doOnNext(m -> {
            try {
                inbox.add(new Received(Seen.now(), m.toByteArray()));
            } finally {
                m.release();
            }
        }).contextCapture().subscribe();
        try {
            // The advert, which the server sent when the connection came up.
            Received advert = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(advert, "no advert");
            seen.set(advert.seen());
            assertPropagated("receive");
            RemoteBuffer remote = RemoteBuffer.readFrom(ByteBuffer.wrap(advert.bytes()));

            REQUEST.set("send");
            c.send(ByteBuffer.wrap("ping".getBytes(StandardCharsets.US_ASCII)))
                    .doOnSuccess(x -> seen.set(Seen.now())).block(T);
            assertPropagated("send");
            Received echo = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(echo, "no echo");
            assertEquals("ping", new String(echo.bytes(), StandardCharsets.US_ASCII));
            seen.set(echo.seen());
            assertPropagated("receive"); // what receive()'s subscriber had, whatever the thread set since

            RegisteredBuffer local = c.register(arena.allocate(4096, 4096), AccessFlags.LOCAL_WRITE);
            local.segment().fill((byte) 7);
            REQUEST.set("write");
            c.write(local, remote).doOnSuccess(x -> seen.set(Seen.now())).block(T);
            assertPropagated("write");
            assertEquals(7, region.get(ValueLayout.JAVA_BYTE, 4095), "the write landed");

            local.segment().fill((byte) 0);
            REQUEST.set("read");
            c.read(local, remote).doOnSuccess(x -> seen.set(Seen.now())).block(T);
            assertPropagated("read");
            assertEquals(7, local.segment().get(ValueLayout.JAVA_BYTE, 4095), "the read came back");
        } finally {
            receiving.dispose();
            c.disposeNow(T);
        }
        // The auto-releasing style is a receive() too, with an operator of rdmaflux's between.
        RdmaConnection auto = RdmaConnection.connect(server.address()).block(T);
        assertNotNull(auto);
        try {
            REQUEST.set("autoRelease");
            byte[] advert = auto.receive().asByteArray().doOnNext(b -> seen.set(Seen.now())).blockFirst(T);
            assertNotNull(advert);
            assertEquals(RemoteBuffer.ENCODED_SIZE, advert.length);
            assertPropagated("autoRelease");
        } finally {
            auto.disposeNow(T);
        }
    }

    /** A message as receive()'s subscriber got it. */
    record Received(Seen seen, byte[] bytes) {
    }

    /**
     * The control: the same send with the hook off. Its signal arrives on an rdmaflux thread without the
     * caller's value, so the cases above see the value because it was propagated.
     */
    @Test
    void withoutAutomaticPropagationTheValueStaysOnTheCallersThread() {
        RdmaConnection c = RdmaConnection.connect(server.address()).block(T);
        assertNotNull(c);
        try {
            REQUEST.set("send");
            c.send(ByteBuffer.wrap("ping".getBytes(StandardCharsets.US_ASCII)))
                    .doOnSuccess(x -> seen.set(Seen.now())).block(T);
            Seen s = awaitSeen();
            assertTrue(s.nonBlocking(), "the send's end did not arrive on an rdmaflux thread: " + s);
            assertNull(s.value(), "the value reached " + s.thread() + " without propagation");
        } finally {
            c.disposeNow(T);
        }
    }

    private void assertPropagated(String expected) {
        Seen s = awaitSeen();
        assertTrue(s.nonBlocking(), expected + ": the signal did not arrive on an rdmaflux thread, so it proves "
                + "nothing: " + s);
        assertNotEquals(Thread.currentThread().getName(), s.thread());
        assertEquals(expected, s.value(), expected + ": the caller's ThreadLocal on " + s.thread());
    }

    private Seen awaitSeen() {
        // block() returned after the operator ran, so there is nothing to wait for.
        Seen s = seen.getAndSet(null);
        assertNotNull(s, "the operator did not run");
        return s;
    }
}
