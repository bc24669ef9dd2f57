package rdmaflux.cm;

import rdmaflux.cm.internal.rc.Wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import reactor.core.Disposable;
import reactor.test.StepVerifier;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.WcStatus;

/**
 * A peer that breaks the protocol ({@link HostilePeer}, raw verbs) against a normal rdmaflux server in
 * this JVM: every case fails that one connection with a typed error (docs/protocol.md, "What the
 * receiver checks"), a well-behaved client of the same server keeps echoing throughout, and afterwards
 * the kernel's RDMA objects are back at the baseline. docs/reliability.md lists each case.
 */
class HostilePeerIT {
    private static final Duration T = Duration.ofSeconds(60);
    /** The server's data receive buffers: the credits it grants each peer. */
    private static final int CREDITS = 4;
    private static final int BUFFER = 8192;
    /** The server's maxInboundMessageSize. */
    private static final int INBOUND_LIMIT = 1 << 20;
    private static final byte[] ECHO = "echo".getBytes(StandardCharsets.US_ASCII);

    /** A server connection to a hostile peer: what it delivered (held, never released) and how it ended. */
    private static final class Victim {
        final RdmaConnection c;
        final List<RdmaMessage> held = new ArrayList<>();
        final AtomicReference<Throwable> end = new AtomicReference<>();
        final CountDownLatch ended = new CountDownLatch(1);

        Victim(RdmaConnection c) {
            this.c = c;
            c.receive().subscribe(m -> {
                synchronized (held) {
                    held.add(m);
                }
            }, e -> {
                end.set(e);
                ended.countDown();
            }, ended::countDown);
        }

        /** {@return the error receive() ended with, within the timeout} */
        Throwable awaitFailure() throws InterruptedException {
            assertTrue(ended.await(T.toSeconds(), TimeUnit.SECONDS), "the connection to the hostile peer did not end");
            assertNotNull(end.get(), "receive() completed instead of failing");
            c.onDispose().block(T); // it frees itself, without a dispose()
            return end.get();
        }

        int heldCount() {
            synchronized (held) {
                return held.size();
            }
        }

        void releaseAll() {
            synchronized (held) {
                held.forEach(RdmaMessage::release);
                held.clear();
            }
        }
    }

    /**
     * The server under test: connections whose private data is {@link #ECHO} echo, the others (the
     * hostile peers') are {@link Victim}s. Records the server's failed accepts by cause. And one
     * well-behaved client, echoing.
     */
    private static final class Target implements AutoCloseable {
        final Map<String, Integer> baseline = Resources.baseline();
        final ConcurrentLinkedQueue<String> failedAccepts = new ConcurrentLinkedQueue<>();
        final LinkedBlockingQueue<Victim> victims = new LinkedBlockingQueue<>();
        final RdmaServer server;
        final Disposable handlers;
        final RdmaConnection good;
        final LinkedBlockingQueue<Object> goodInbox = new LinkedBlockingQueue<>();
        private int seq;

        Target(Duration acceptTimeout) {
            RdmaRecorder recorder = new RdmaRecorder() {
                @Override
                public void connectOutcome(boolean isServer, Outcome outcome, String cause) {
                    if (isServer && outcome == Outcome.FAILURE) {
                        failedAccepts.add(cause);
                    }
                }
            };
            ConnectionOptions options = ConnectionOptions.defaults().toBuilder().receiveBuffers(CREDITS)
                    .bufferSize(BUFFER).recorder(recorder).timeout(Step.ACCEPT, acceptTimeout)
                    .maxInboundMessageSize(INBOUND_LIMIT).build();
            server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                    AcceptFilter.ACCEPT_ALL).block(T);
            handlers = server.connections().subscribe(c -> {
                if (java.util.Arrays.equals(ECHO, c.peerPrivateData())) {
                    EchoServer.echo(c, options);
                } else {
                    victims.add(new Victim(c));
                }
            });
            good = RdmaConnection.connect(server.address(),
                    ConnectionOptions.defaults().toBuilder().privateData(ECHO).build()).block(T);
            good.receiveBytes().subscribe(goodInbox::add, goodInbox::add);
            assertGoodEchoes();
        }

        Target() {
            this(Duration.ofSeconds(30));
        }

        /** The well-behaved client's messages still come back, intact. */
        void assertGoodEchoes() {
            for (int i = 0; i < 3; i++) {
                int n = seq++;
                good.send(Payloads.message(n, 1000)).block(T);
                Payloads.verify(Inbox.take(goodInbox, T), n, 1000);
            }
        }

        Victim victim() throws InterruptedException {
            Victim v = victims.poll(T.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(v, "the server delivered no connection for the hostile peer");
            return v;
        }

        /** Ends the test: the good client still echoes; everything closed is back at the baseline. */
        @Override
        public void close() {
            assertGoodEchoes();
            assertTrue(victims.isEmpty(), "a hostile connection nobody looked at: " + victims);
            good.disposeNow(T);
            handlers.dispose();
            server.disposeNow(T);
            Resources.awaitBaseline(baseline, T, "after the hostile peers");
        }
    }

    // ---------------------------------------------------------------- the hello

    /** Private data that is not a valid hello. The CM pads a connect's private data with zeros to 56 bytes. */
    enum BadHello {
        WRONG_MAGIC(HostilePeer.hello(0x52465832, 2, 0, 16, 8192, 12)),
        VERSION_0(HostilePeer.hello(Wire.MAGIC, 0, 0, 16, 8192, 12)),
        VERSION_3(HostilePeer.hello(Wire.MAGIC, 3, 0, 16, 8192, 12)),
        /** Arrives padded: its buffer size reads 0. */
        TRUNCATED(HostilePeer.hello(Wire.MAGIC, 2, 0, 16, 8192, 8)),
        /** 12 + 45 bytes: past the 56 the CM carries. */
        APPLICATION_LENGTH_PAST_THE_DATA(HostilePeer.hello(Wire.MAGIC, 2, 45, 16, 8192, 20)),
        BUFFER_SIZE_0(HostilePeer.hello(Wire.MAGIC, 2, 0, 16, 0, 12)),
        NEGATIVE_BUFFER_SIZE(HostilePeer.hello(Wire.MAGIC, 2, 0, 16, -8192, 12)),
        NONE(new byte[0]);

        final byte[] data;

        BadHello(byte[] data) {
            this.data = data;
        }
    }

    @Test
    void malformedHellosAreRejectedWithATypedErrorBeforeAnythingIsAllocated() {
        try (Target target = new Target()) {
            for (BadHello bad : BadHello.values()) {
                try (HostilePeer peer = new HostilePeer(target.server.address(), T)) {
                    peer.connect(bad.data);
                    CmEvent rejected = peer.expect(CmEventType.REJECTED);
                    assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, rejected.status(), bad + ": " + rejected);
                }
            }
            assertEquals(BadHello.values().length, target.failedAccepts.size(), "failures: " + target.failedAccepts);
            target.failedAccepts.forEach(c -> assertEquals("ProtocolViolation", c));
            assertTrue(target.victims.isEmpty(), "a connection was accepted: " + target.victims);
        }
    }

    /**
     * The other direction: a raw server accepting an rdmaflux client with a reply that is not a hello.
     * The client's connect fails with a typed {@link RdmaCmException.ProtocolViolation} at the connect
     * step and frees its objects.
     */
    @Test
    void aServerAnsweringWithoutAValidHelloFailsTheConnectWithProtocolViolation() {
        Map<String, Integer> baseline = Resources.baseline();
        try (EventChannel channel = EventChannel.create()) {
            CmId listener = channel.createId(PortSpace.TCP);
            listener.bind(new InetSocketAddress(RdmaTestEnv.address(), 0));
            listener.listen(4);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch failed = new CountDownLatch(1);
            RdmaConnection.connect(listener.localAddress()).subscribe(c -> {
                c.dispose();
                failed.countDown();
            }, e -> {
                failure.set(e);
                failed.countDown();
            });
            CmEvent request = channel.awaitEvent(T);
            assertNotNull(request, "no connect request");
            assertEquals(CmEventType.CONNECT_REQUEST, request.type());
            CmId conn = request.id();
            conn.createQueuePair(conn.context().allocateProtectionDomain(), QpInitAttributes.builder(QpType.RC)
                    .completionQueue(conn.context().createCompletionQueue(8, null, 0)).build());
            conn.accept(ConnectionParameters.DEFAULTS.withPrivateData(
                    HostilePeer.hello(Wire.MAGIC, 9, 0, 16, 8192, 12)));
            assertTrue(await(failed), "the connect did not end");
            RdmaCmException.ProtocolViolation v = assertInstanceOf(RdmaCmException.ProtocolViolation.class,
                    failure.get(), String.valueOf(failure.get()));
            assertEquals(Step.CONNECT, v.step());
            conn.close();
        }
        Resources.awaitBaseline(baseline, T, "after a connect to a server without a valid hello");
    }

    // ---------------------------------------------------------------- messages

    /** One message a peer may not send, and the rule it breaks. */
    enum Forgery {
        /** A control message returning 5 credits, when the server spent none. */
        CREDITS_IN_A_CONTROL_MESSAGE,
        /** A data message (it has a credit) returning 3 credits never spent. */
        CREDITS_IN_A_DATA_MESSAGE,
        /** A plain SEND: in credit mode every SEND carries immediate data. */
        SEND_WITHOUT_IMMEDIATE_DATA,
        /** A large-message descriptor of 10 bytes instead of 16. */
        DESCRIPTOR_OF_THE_WRONG_SIZE,
        /** A descriptor announcing 0 bytes. */
        DESCRIPTOR_OF_NOTHING,
        /** "Finished reading 1 large message" when the server sent none. */
        FINISHED_A_LARGE_MESSAGE_NEVER_SENT,
        /** A descriptor announcing 1 byte more than the server accepts (its maxInboundMessageSize). */
        DESCRIPTOR_BEYOND_THE_INBOUND_LIMIT
    }

    @ParameterizedTest
    @EnumSource(Forgery.class)
    void aForgedMessageFailsThatConnectionWithProtocolViolation(Forgery forgery) throws Exception {
        try (Target target = new Target(); HostilePeer peer = new HostilePeer(target.server.address(), T)) {
            peer.connectWithGoodHello();
            Victim victim = target.victim();
            switch (forgery) {
                case CREDITS_IN_A_CONTROL_MESSAGE -> peer.send(0, Wire.CONTROL | 5);
                case CREDITS_IN_A_DATA_MESSAGE -> peer.send(10, 3);
                case SEND_WITHOUT_IMMEDIATE_DATA -> peer.send(10, null);
                case DESCRIPTOR_OF_THE_WRONG_SIZE -> peer.send(10, Wire.LARGE);
                case DESCRIPTOR_OF_NOTHING -> peer.send(descriptor(peer.address(), peer.rkey(), 0), Wire.LARGE);
                case FINISHED_A_LARGE_MESSAGE_NEVER_SENT -> peer.send(0, Wire.CONTROL | (1 << Wire.FINISHED_SHIFT));
                case DESCRIPTOR_BEYOND_THE_INBOUND_LIMIT ->
                        peer.send(descriptor(peer.address(), peer.rkey(), INBOUND_LIMIT + 1), Wire.LARGE);
            }
            assertEquals(WcStatus.SUCCESS, peer.awaitSend(), "the server's QP took the message");
            Throwable end = victim.awaitFailure();
            RdmaCmException.ProtocolViolation v = assertInstanceOf(RdmaCmException.ProtocolViolation.class, end,
                    String.valueOf(end));
            assertEquals(Step.TRANSFER, v.step());
            assertEquals(0, victim.heldCount(), "the forged message was delivered");
            System.out.printf("%s: %s%n", forgery, v.getMessage());
            // Operations after the failure fail with it, not with a generic IllegalStateException.
            StepVerifier.create(victim.c.send(ByteBuffer.allocate(8)))
                    .expectErrorSatisfies(e -> assertEquals(v, e)).verify(T);
            assertInstanceOf(ConnectionState.Failed.class, victim.c.states().blockLast(T));
            assertTrue(peer.awaitEvent(CmEventType.DISCONNECTED, T), "the server did not disconnect the peer");
        }
    }

    /**
     * Not hostile, only too big: an rdmaflux client sending one byte more than the server accepts. The
     * server's connection fails with ProtocolViolation before allocating anything for it; the client's
     * send fails, typed, when the connection ends.
     */
    @Test
    void aMessageBeyondTheReceiversLimitFailsThatConnection() throws Exception {
        try (Target target = new Target()) {
            RdmaConnection sender = RdmaConnection.connect(target.server.address()).block(T);
            Victim victim = target.victim();
            StepVerifier.create(sender.send(ByteBuffer.allocateDirect(INBOUND_LIMIT + 1)))
                    .expectErrorSatisfies(e -> assertInstanceOf(RdmaCmException.class, e, String.valueOf(e)))
                    .verify(T);
            Throwable end = victim.awaitFailure();
            RdmaCmException.ProtocolViolation v = assertInstanceOf(RdmaCmException.ProtocolViolation.class, end,
                    String.valueOf(end));
            assertTrue(v.getMessage().contains("maxInboundMessageSize"), v.getMessage());
            sender.onDispose().block(T);
        }
    }

    /**
     * The server grants 4 credits and the application holds every message: the peer's fifth data
     * message (it lands in one of the 3 control buffers) is a violation. Sent in one burst with three
     * more: the sixth and seventh land in the other control buffers unless the server's QP is already gone;
     * the eighth finds no buffer posted at the latest, and that send fails with RETRY_EXC_ERR (RNR, then
     * the server's QP is gone), flushing those after it.
     */
    @Test
    void dataMessagesBeyondTheGrantedCreditsFailTheConnection() throws Exception {
        try (Target target = new Target(); HostilePeer peer = new HostilePeer(target.server.address(), T)) {
            peer.connectWithGoodHello();
            assertEquals(CREDITS, peer.serverHello().credits());
            Victim victim = target.victim();
            int burst = CREDITS + ConnectionOptions.CONTROL_RECEIVE_BUFFERS + 1;
            for (int i = 0; i < burst; i++) {
                peer.send(100, 0);
            }
            List<WcStatus> statuses = new ArrayList<>();
            for (int i = 0; i < burst; i++) {
                statuses.add(peer.awaitSend());
            }
            Throwable end = victim.awaitFailure();
            System.out.println("sends beyond the credits: the peer's completions " + statuses + "; the server: " + end);
            RdmaCmException.ProtocolViolation v = assertInstanceOf(RdmaCmException.ProtocolViolation.class, end,
                    String.valueOf(end));
            assertTrue(v.getMessage().contains("without a credit"), v.getMessage());
            assertEquals(CREDITS, victim.heldCount(), "the messages within the credits were delivered");
            for (int i = 0; i <= CREDITS; i++) {
                assertEquals(WcStatus.SUCCESS, statuses.get(i), "send " + i + ": " + statuses);
            }
            // A send that found no buffer gets RNR NAKs (the server's REP asks for infinite RNR retries) until the
            // server's QP is destroyed with the connection, then no answer at all: the transport retries run out.
            // Which send that is depends on how soon the server fails the connection: the last one at the latest,
            // or an earlier one when the QP was gone before the control buffers were used up. Every send after it
            // is flushed, as the peer's QP is then in the error state.
            int failed = CREDITS + 1;
            while (failed < burst && statuses.get(failed) == WcStatus.SUCCESS) {
                failed++;
            }
            assertTrue(failed < burst, "every send succeeded though the last found no buffer: " + statuses);
            assertEquals(WcStatus.RETRY_EXC_ERR, statuses.get(failed), "a send with no buffer posted: " + statuses);
            for (int i = failed + 1; i < burst; i++) {
                assertEquals(WcStatus.WR_FLUSH_ERR, statuses.get(i), "send " + i + " after the failed one: " + statuses);
            }
            victim.releaseAll(); // after the failure: nothing is posted again, no credit owed
        }
    }

    /**
     * A SEND one byte larger than the server's receive buffers: the server's receive completion fails,
     * and with it that connection ({@code CompletionError}: {@code LOC_QP_OP_ERR} on Soft-RoCE,
     * {@code LOC_LEN_ERR} on hardware).
     */
    @Test
    void aSendLargerThanTheReceiveBuffersFailsTheConnectionWithALocalError() throws Exception {
        try (Target target = new Target(); HostilePeer peer = new HostilePeer(target.server.address(), T)) {
            peer.connectWithGoodHello();
            assertEquals(BUFFER, peer.serverHello().bufferSize());
            Victim victim = target.victim();
            peer.send(BUFFER + 1, 0);
            WcStatus theirs = peer.awaitSend();
            Throwable end = victim.awaitFailure();
            System.out.println("oversized SEND: the peer's completion " + theirs + "; the server: " + end);
            RdmaCmException.CompletionError e = assertInstanceOf(RdmaCmException.CompletionError.class, end,
                    String.valueOf(end));
            // The spec's status is LOC_LEN_ERR (hardware); Soft-RoCE (Linux 6.1) reports LOC_QP_OP_ERR, and the
            // peer gets REM_OP_ERR there (REM_INV_REQ_ERR on hardware).
            assertTrue(e.wcStatus() == WcStatus.LOC_LEN_ERR || e.wcStatus() == WcStatus.LOC_QP_OP_ERR,
                    e.getMessage());
            assertTrue(theirs == WcStatus.REM_OP_ERR || theirs == WcStatus.REM_INV_REQ_ERR, theirs.toString());
            StepVerifier.create(victim.c.send(ByteBuffer.allocate(8))).expectErrorSatisfies(x -> assertEquals(e, x))
                    .verify(T);
        }
    }

    /** A remote access the server never granted. */
    enum BadKey {
        /** RDMA READ with a key the server never made. */
        FORGED_READ,
        /** RDMA WRITE with a key the server never made. */
        FORGED_WRITE,
        /** RDMA READ of memory the server registered with remote read and deregistered again. */
        STALE_READ
    }

    /**
     * The peer's operation fails with REM_ACCESS_ERR; the server's QP, as the refusing responder, goes
     * to the error state with it, which flushes its receives: the server's connection fails at once with
     * a {@code CompletionError} {@code WR_FLUSH_ERR} (it cannot send or receive any more), and frees itself.
     */
    @ParameterizedTest
    @EnumSource(BadKey.class)
    void aRemoteAccessWithABadKeyIsRefusedAndEndsThatConnection(BadKey bad) throws Exception {
        try (Target target = new Target(); HostilePeer peer = new HostilePeer(target.server.address(), T);
             Arena arena = Arena.ofShared()) {
            peer.connectWithGoodHello();
            Victim victim = target.victim();
            RemoteBuffer remote = new RemoteBuffer(0x10000, 64, 0x5eed1234);
            if (bad == BadKey.STALE_READ) {
                RegisteredBuffer r = victim.c.register(arena.allocate(4096, 4096),
                        AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
                remote = r.remote();
                r.close();
            }
            peer.rdma(bad == BadKey.FORGED_WRITE, remote.address(), remote.rkey(), 64);
            assertEquals(WcStatus.REM_ACCESS_ERR, peer.awaitSend());
            Throwable end = victim.awaitFailure();
            System.out.printf("%s: the server's connection ended with %s%n", bad, end);
            RdmaCmException.CompletionError e = assertInstanceOf(RdmaCmException.CompletionError.class, end,
                    String.valueOf(end));
            assertEquals(WcStatus.WR_FLUSH_ERR, e.wcStatus(), e.getMessage());
        }
    }

    /**
     * A valid descriptor whose key is forged: the server's RDMA READ of the "large message" is refused
     * by the peer (REM_ACCESS_ERR), which fails the server's connection with that completion error.
     */
    @Test
    void aLargeMessageDescriptorWithAForgedKeyFailsTheConnection() throws Exception {
        try (Target target = new Target(); HostilePeer peer = new HostilePeer(target.server.address(), T)) {
            peer.connectWithGoodHello();
            assertTrue(peer.serverHello().largeMessages());
            Victim victim = target.victim();
            peer.send(descriptor(peer.address(), peer.rkey() ^ 0x5a5a00, 20_000), Wire.LARGE);
            assertEquals(WcStatus.SUCCESS, peer.awaitSend());
            Throwable end = victim.awaitFailure();
            System.out.println("descriptor with a forged key: the server's connection ended with " + end);
            RdmaCmException.CompletionError e = assertInstanceOf(RdmaCmException.CompletionError.class, end,
                    String.valueOf(end));
            assertEquals(WcStatus.REM_ACCESS_ERR, e.wcStatus(), e.getMessage());
            assertEquals(0, victim.heldCount());
        }
    }

    private static byte[] descriptor(long address, int rkey, int length) {
        return ByteBuffer.allocate(Wire.DESCRIPTOR).order(ByteOrder.BIG_ENDIAN).putLong(address).putInt(rkey)
                .putInt(length).array();
    }

    // ---------------------------------------------------------------- the handshake

    /**
     * Peers that go away after their connect request, before the connection is established: three that
     * destroy their id at once, and three that stall (never read their CM events, so librdmacm never
     * sends the RTU that completes the server's accept) until the server's accept timeout (3 s) failed
     * them with {@code StepTimeout}. None reaches the server's subscriber; the server frees each.
     */
    @Test
    void peersDisconnectingMidHandshakeAreFreedAndNeverDelivered() throws Exception {
        Duration acceptTimeout = Duration.ofSeconds(3);
        try (Target target = new Target(acceptTimeout)) {
            for (int i = 0; i < 3; i++) {
                try (HostilePeer peer = new HostilePeer(target.server.address(), T)) {
                    peer.connect(HostilePeer.goodHello());
                }
            }
            // Each ends at the server one way or another (its REJ, a failed accept, or the accept timeout).
            long abrupt = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (target.failedAccepts.size() < 3 && System.nanoTime() < abrupt) {
                Resources.sleep(100);
            }
            System.out.println("peers gone right after their connect request: the server's failed accepts "
                    + target.failedAccepts);
            assertEquals(3, target.failedAccepts.size(), "failed accepts: " + target.failedAccepts);
            // rdma_accept fails at once (the CM has the peer's reject): the typed ConnectError.
            target.failedAccepts.forEach(c -> assertTrue(c.equals("ConnectError") || c.equals("Rejected"), c));
            target.failedAccepts.clear();
            List<HostilePeer> stalled = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    stalled.add(new HostilePeer(target.server.address(), T));
                    stalled.getLast().connect(HostilePeer.goodHello());
                }
                long deadline = System.nanoTime() + T.toNanos();
                while (target.failedAccepts.stream().filter("StepTimeout"::equals).count() < 3
                        && System.nanoTime() < deadline) {
                    Resources.sleep(100);
                }
            } finally {
                stalled.forEach(HostilePeer::close);
            }
            System.out.println("mid-handshake: the server's failed accepts " + target.failedAccepts);
            assertEquals(3, target.failedAccepts.stream().filter("StepTimeout"::equals).count(),
                    "stalled peers timed out: " + target.failedAccepts);
            assertNull(target.victims.poll(1, TimeUnit.SECONDS), "a connection reached the subscriber");
        }
    }

    private static boolean await(CountDownLatch latch) {
        try {
            return latch.await(T.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
