package rdmaflux.cm;

import rdmaflux.cm.internal.lifecycle.Connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import reactor.core.publisher.Flux;
import rdmaflux.cm.MulticastTestSupport.Tool;
import rdmaflux.testing.RemoteProcess;
import rdmaflux.testing.SandboxHosts;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * Traffic that crosses a wire: this JVM on host 1 of {@code scripts/sandbox/hosts} (192.0.2.1), peers on
 * hosts 2 and 3, each with its own rxe device on its own virtio NIC. Run with {@code RDMAFLUX_IT_HOSTS=3
 * scripts/it}. Host 3 crashes in test 6 and restarts in test 7; host 2 crashes in the last test. The tests
 * that need only an echo peer on host 2 share one ({@link #echoPeer()}).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CrossHostsIT {
    private static final Duration T = Duration.ofSeconds(60);
    /** A peer JVM under emulation, with three VMs sharing two cores: tens of seconds to main. */
    private static final Duration STARTUP = Duration.ofSeconds(180);
    /**
     * The handshake crosses two emulated hosts that share two cores with the peer's JVM still warming up:
     * the default 10 s connect bound was seen to pass before the peer's reply did.
     */
    /**
     * A multicast join on three emulated hosts sharing the machine's cores can take several seconds (a
     * fresh JVM's first join, the IGMP report across the wire); on a machine twice as slow it outgrew the
     * default 10 s. The tests are about hosts dying, not about join time.
     */
    static final Duration JOIN = Duration.ofSeconds(60);
    /**
     * Handshake bounds for emulated hosts: connect and accept take seconds where hardware takes milliseconds, and
     * address resolution waits for the other VM's ARP answer, which a busy machine delays past the default
     * 2 s (a fresh host 2 starting its peer JVM was seen to let a first connect's 2 s address step run out).
     * Tests about a step's bound set their own.
     */
    static final ConnectionOptions SLOW_HANDSHAKE = ConnectionOptions.defaults().toBuilder()
            .timeout(Step.ADDRESS, Duration.ofSeconds(10)).timeout(Step.ROUTE, Duration.ofSeconds(10))
            .timeout(Step.CONNECT, Duration.ofSeconds(60)).timeout(Step.ACCEPT, Duration.ofSeconds(60)).build();
    /** rping's server prints nothing once it listens, but its listening CM id shows in the kernel's table. */
    private static final String UNTIL_LISTENING =
            "until rdma resource show cm_id | grep -q LISTEN; do sleep 0.1; done";

    /** Shared by the tests that need only a live echo peer, until the last test crashes its host. */
    private static final EchoPeer ECHO = new EchoPeer();

    private static RemoteProcess echoPeer() {
        return ECHO.get();
    }

    @AfterAll
    static void stopEchoPeer() {
        ECHO.close();
    }

    @Test
    @Order(1)
    void wireCutDuringConnectFailsTypedWithinBoundAndLeaksNothing() {
        SandboxHosts.require(2);
        Map<String, Integer> baseline = Resources.baseline();
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder()
                .timeout(Step.ADDRESS, Duration.ofSeconds(5)).timeout(Step.ROUTE, Duration.ofSeconds(5))
                .timeout(Step.CONNECT, Duration.ofSeconds(10)).build();
        SandboxHosts.link(2, false);
        try {
            long start = System.nanoTime();
            Throwable e = assertThrows(Throwable.class, () -> RdmaConnection.connect(
                    new InetSocketAddress(SandboxHosts.address(2), 7471), options).block(T));
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            System.out.println("wire cut during connect: " + e + " after " + took.toMillis() + " ms");
            assertInstanceOf(RdmaCmException.class, e, "a typed CM error");
            assertTrue(took.compareTo(Duration.ofSeconds(30)) < 0, "failed within the step timeouts: " + took);
        } finally {
            SandboxHosts.link(2, true);
        }
        Resources.awaitBaseline(baseline, T, "after a connect over a cut wire");
    }

    @Test
    @Order(2)
    void echoReadWriteAndAtomicsAcrossHosts() {
        SandboxHosts.require(2);
        RemoteProcess peer = echoPeer();
        try (Arena local = Arena.ofShared()) {
            int port = Integer.parseInt(peer.awaitLine(l -> l.startsWith("PORT "), STARTUP).substring(5).trim());
            RdmaConnection c = RdmaConnection.connect(new InetSocketAddress(SandboxHosts.address(2), port),
                    SLOW_HANDSHAKE).block(T);
            assertEquals(SandboxHosts.address(1), c.localAddress().getAddress());
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(inbox::add, inbox::add);
            ByteBuffer advert = ByteBuffer.wrap(take(inbox));
            RemoteBuffer region = RemoteBuffer.readFrom(advert);
            RemoteBuffer word = RemoteBuffer.readFrom(advert);

            // Echo, including messages of the largest size, in order and intact.
            int n = 50;
            c.send(Flux.range(0, n).map(i -> Payloads.message(i, i % 10 == 0 ? c.eagerMessageSize() : 100 + i)))
                    .block(T);
            for (int i = 0; i < n; i++) {
                Payloads.verify(take(inbox), i, i % 10 == 0 ? c.eagerMessageSize() : 100 + i);
            }

            // Large messages (beyond the 8 KiB receive buffers): each side RDMA-READs them across the wire.
            int[] large = {Payloads.MIB, 512 * 1024, Payloads.MIB - 1};
            c.send(Flux.range(0, large.length).map(i -> Payloads.message(100 + i, large[i]))).block(T);
            for (int i = 0; i < large.length; i++) {
                Payloads.verify(take(inbox), 100 + i, large[i]);
            }

            // RDMA read of the peer's whole region (many packets on the wire), then write and read back.
            RegisteredBuffer buf = c.register(local.allocate(HostsPeerMain.REGION, 4096), AccessFlags.LOCAL_WRITE);
            c.read(buf, region).block(T);
            Payloads.verify(buf.segment(), 1, HostsPeerMain.REGION);
            MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(7, HostsPeerMain.REGION)), 0,
                    buf.segment(), 0, HostsPeerMain.REGION);
            c.write(buf, region).block(T);
            buf.segment().fill((byte) 0);
            c.read(buf, region).block(T);
            Payloads.verify(buf.segment(), 7, HostsPeerMain.REGION);

            assertEquals(HostsPeerMain.WORD_START, c.fetchAndAdd(word, 5).block(T));
            assertEquals(HostsPeerMain.WORD_START + 5, c.compareAndSwap(word, HostsPeerMain.WORD_START + 5, 1).block(T));
            assertEquals(1L, c.fetchAndAdd(word, 0).block(T));
            c.disposeNow(T);
        }
    }

    @Test
    @Order(3)
    void udDatagramsEchoAcrossHosts() {
        SandboxHosts.require(2);
        String udPort = echoPeer().awaitLine(l -> l.startsWith("UDPORT "), STARTUP);
        int port = Integer.parseInt(udPort.substring(7).trim());
        RdmaDatagramEndpoint ep = RdmaDatagramEndpoint.bind(new InetSocketAddress(SandboxHosts.address(1), 0))
                .block(T);
        DatagramPeer there = ep.resolve(new InetSocketAddress(SandboxHosts.address(2), port)).block(T);
        int n = 30;
        Flux<Datagram> replies = ep.receive().take(n).cache();
        replies.subscribe();
        Flux.range(0, n).concatMap(i -> ep.send(there, MulticastTestSupport.payload(i, 64 + i))).then().block(T);
        List<Datagram> got = replies.collectList().block(T);
        assertEquals(n, got.size());
        for (int i = 0; i < n; i++) {
            Datagram d = got.get(i);
            assertTrue(MulticastTestSupport.isPayload(d, i, 64 + i), "reply " + i);
            assertEquals(SandboxHosts.address(2), d.source(), "the echo came from the other host");
        }
        ep.dispose();
        ep.onDispose().block(T);
    }

    @Test
    @Order(4)
    void rpingInteropBothDirections() throws Exception {
        SandboxHosts.require(2);
        String here = SandboxHosts.address(1).getHostAddress();
        String there = SandboxHosts.address(2).getHostAddress();
        // rping server over there, client here: rping -V verifies the data on both sides.
        try (RemoteProcess server = SandboxHosts.start(2, List.of("sh", "-c", "rping -s -a " + there
                + " -C 10 -V & " + UNTIL_LISTENING + "; echo LISTENING; wait $!"))) {
            server.awaitLine("LISTENING"::equals, T);
            try (Tool client = new Tool(List.of("rping", "-c", "-a", there, "-C", "10", "-V", "-v"))) {
                assertEquals(0, client.exitCode(T), client.output());
            }
            assertEquals(0, server.waitFor(T), server.stderr());
        }
        // And the other way round.
        try (Tool server = new Tool(List.of("rping", "-s", "-a", here, "-C", "10", "-V", "-v"))) {
            Tool listening = new Tool(List.of("sh", "-c", UNTIL_LISTENING));
            assertEquals(0, listening.exitCode(T), listening.output());
            try (RemoteProcess client = SandboxHosts.start(2, List.of("rping", "-c", "-a", here, "-C", "10", "-V"))) {
                assertEquals(0, client.waitFor(T), client.stderr());
            }
            assertEquals(0, server.exitCode(T), server.output());
        }
    }

    @Test
    @Order(5)
    void mckeyInteropBothDirections() throws Exception {
        SandboxHosts.require(3);
        InetAddress group = InetAddress.getByName("239.1.2.1");
        MulticastOptions options = MulticastOptions.builder().localAddress(SandboxHosts.address(1)).joinTimeout(JOIN)
                .build();
        // Our sender, mckey receivers on the two other hosts.
        try (RemoteProcess r2 = SandboxHosts.start(2, mckey(group, 2, "-C", "20", "-S", "100"));
             RemoteProcess r3 = SandboxHosts.start(3, mckey(group, 3, "-C", "20", "-S", "100"))) {
            // mckey posts its receives before it joins: once it says so, nothing sent can be lost.
            r2.awaitLine(l -> l.contains("joined"), T);
            r3.awaitLine(l -> l.contains("joined"), T);
            MulticastSender s = RdmaMulticast.sender(group, options).block(T);
            s.send(Flux.range(0, 20).map(i -> MulticastTestSupport.payload(i, 100))).block(T);
            assertEquals(0, r2.waitFor(T), r2.stdoutLines().toString());
            assertEquals(0, r3.waitFor(T), r3.stdoutLines().toString());
            s.dispose();
            s.onDispose().block(T);
        }
        // mckey's sender over there, our receiver here.
        InetAddress group2 = InetAddress.getByName("239.1.2.2");
        MulticastMembership m = RdmaMulticast.join(group2, options).block(T);
        try (RemoteProcess sender = SandboxHosts.start(2, mckey(group2, 2, "-s", "-C", "20", "-S", "100"))) {
            assertEquals(0, sender.waitFor(T), sender.stdoutLines().toString());
        }
        List<Datagram> got = m.datagrams().take(20).collectList().block(T);
        assertEquals(20, got.size());
        for (Datagram d : got) {
            assertEquals(SandboxHosts.address(2), d.source());
            assertEquals(100, d.length());
        }
        m.dispose();
        m.onDispose().block(T);
    }

    @Test
    @Order(6)
    void multicastToTwoHostsAndOneReceiverHostDies() throws Exception {
        SandboxHosts.require(3);
        InetAddress group = InetAddress.getByName("239.1.2.3");
        int first = 20;
        int total = 40;
        try (RemoteProcess r2 = SandboxHosts.startJava(2, HostsPeerMain.class, "mcast", group.getHostAddress(),
                     Integer.toString(total));
             RemoteProcess r3 = SandboxHosts.startJava(3, HostsPeerMain.class, "mcast", group.getHostAddress(),
                     Integer.toString(total))) {
            r2.awaitLine("JOINED"::equals, STARTUP);
            r3.awaitLine("JOINED"::equals, STARTUP);
            MulticastSender s = RdmaMulticast.sender(group, MulticastOptions.builder()
                    .localAddress(SandboxHosts.address(1)).joinTimeout(JOIN).build()).block(JOIN);
            s.send(Flux.range(0, first).map(i -> MulticastTestSupport.payload(i, 100))).block(T);
            r2.awaitLine(("GOT " + (first - 1))::equals, T);
            r3.awaitLine(("GOT " + (first - 1))::equals, T);

            // Host 3 crashes: no leave message, its VM just stops. The sender and host 2 carry on.
            SandboxHosts.kill(3);
            s.send(Flux.range(first, total - first).map(i -> MulticastTestSupport.payload(i, 100))).block(T);
            assertEquals(0, r2.waitFor(T), r2.stderr());
            List<String> lines = r2.stdoutLines();
            for (int i = 0; i < total; i++) {
                assertEquals("GOT " + i, lines.get(i + 1), "host 2 got every datagram, in order");
            }
            s.dispose();
            s.onDispose().block(T);
        }
    }

    /** After test 6 crashed host 3: the server's host restarts under a client that keeps reconnecting. */
    @Test
    @Order(7)
    void aClientReconnectsOnceItsServersHostRestarted() throws Exception {
        SandboxHosts.require(3);
        assertTrue(SandboxHosts.crashed(3), "host 3 crashed in the multicast test");
        InetSocketAddress server = new InetSocketAddress(SandboxHosts.address(3), 7479);
        ConnectionOptions options = SLOW_HANDSHAKE.toBuilder().timeout(Step.ADDRESS, Duration.ofSeconds(2)).build();
        java.util.concurrent.atomic.AtomicInteger attempts = new java.util.concurrent.atomic.AtomicInteger();
        java.util.Set<String> failures = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.concurrent.CompletableFuture<RdmaConnection> connected = reactor.core.publisher.Mono.defer(() -> {
                    attempts.incrementAndGet();
                    return RdmaConnection.connect(server, options)
                            .doOnError(e -> failures.add(e.getClass().getSimpleName()));
                })
                .retryWhen(RdmaRetry.reconnect(500, Duration.ofMillis(200)).maxBackoff(Duration.ofSeconds(2)))
                .toFuture();
        long start = System.nanoTime();
        SandboxHosts.boot(3, STARTUP);
        try (RemoteProcess peer = SandboxHosts.startJava(3, HostsPeerMain.class, "serve", "7479")) {
            peer.awaitLine(l -> l.startsWith("PORT "), STARTUP);
            RdmaConnection c = connected.get(STARTUP.toSeconds(), TimeUnit.SECONDS);
            System.out.printf("reconnected to the restarted host after %d attempts in %d s; failures meanwhile: %s%n",
                    attempts.get(), (System.nanoTime() - start) / 1_000_000_000, failures);
            assertTrue(attempts.get() > 1, "the first attempts found the host down");
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(inbox::add, inbox::add);
            take(inbox); // the advert
            c.send(Payloads.message(5, 1000)).block(T);
            Payloads.verify(take(inbox), 5, 1000);
            c.disposeNow(T);
        }
    }

    @Test
    @Order(8)
    void aPortGoingDownFailsAConnectionThatAsksForItAndSparesTheOthers() {
        SandboxHosts.require(2);
        RemoteProcess peer = echoPeer();
        Echo failing = Echo.connect(peer, SLOW_HANDSHAKE.toBuilder()
                .portDownPolicy(ConnectionOptions.PortDownPolicy.FAIL).build());
        Echo waiting = Echo.connect(peer, SLOW_HANDSHAKE);
        long asked = System.nanoTime();
        SandboxHosts.link(SandboxHosts.self(), false); // this host's own port goes down
        long cut = System.nanoTime();
        try {
            Throwable e = awaitFailure(failing.inbox, Duration.ofSeconds(10));
            Duration took = Duration.ofNanos(System.nanoTime() - cut);
            System.out.println("port down: the FAIL connection ended with " + e + " after " + took.toMillis()
                    + " ms (the cut request took " + (cut - asked) / 1_000_000 + " ms)");
            assertInstanceOf(RdmaCmException.PortDown.class, e, e.toString());
        } finally {
            SandboxHosts.link(SandboxHosts.self(), true);
        }
        // The default policy waits for the transport: the port came back within its retry time.
        waiting.c.send(Payloads.message(9, 2000)).block(T);
        Payloads.verify(take(waiting.inbox), 9, 2000);
        waiting.c.disposeNow(T);
        failing.c.disposeNow(T);
    }

    @Test
    @Order(9)
    void wireCutShorterThanTheRetryBoundLosesNothing() {
        SandboxHosts.require(2);
        RemoteProcess peer = echoPeer();
        Echo echo = Echo.connect(peer, SLOW_HANDSHAKE);
        int n = 60;
        int size = 1000;
        // Paced, so that sends are on the wire before, during and after the cut.
        java.util.concurrent.CompletableFuture<Void> sent = echo.c.send(Flux.range(0, n)
                .concatMap(i -> reactor.core.publisher.Mono.delay(Duration.ofMillis(20)).thenReturn(i))
                .map(i -> Payloads.message(i, size))).toFuture();
        for (int i = 0; i < 10; i++) {
            Payloads.verify(take(echo.inbox), i, size);
        }
        SandboxHosts.link(2, false);
        Resources.sleep(1000);
        SandboxHosts.link(2, true);
        for (int i = 10; i < n; i++) {
            Payloads.verify(take(echo.inbox), i, size); // nothing lost, duplicated or reordered
        }
        sent.join();
        System.out.println("a 1 s wire cut on a connection whose retries last " + retryBound(echo.c) + ": resumed");
        echo.c.disposeNow(T);
    }

    @Test
    @Order(10)
    void wireCutMidStreamFailsTypedWithinTheRetryBound() {
        SandboxHosts.require(2);
        Map<String, Integer> baseline = Resources.baseline();
        RemoteProcess peer = echoPeer();
        Echo echo = Echo.connect(peer, SLOW_HANDSHAKE);
        // Soft-RoCE was measured taking up to twice the spec's retry time with a stream in flight.
        Duration bound = retryBound(echo.c).multipliedBy(2);
        reactor.core.Disposable sending = echo.c.send(Flux.interval(Duration.ofMillis(20))
                .onBackpressureDrop().map(i -> Payloads.message((int) (i % 1000), 500))).subscribe(null, e -> { });
        for (int i = 0; i < 10; i++) {
            Payloads.verify(take(echo.inbox), i, 500);
        }
        long asked = System.nanoTime();
        SandboxHosts.link(2, false);
        // The cut took effect between the request and its acknowledgement, which can take seconds on a
        // loaded host: the bound is measured from the acknowledgement, the request's latency printed.
        long cut = System.nanoTime();
        try {
            Throwable e = awaitFailure(echo.inbox, bound.plus(SLACK));
            Duration took = Duration.ofNanos(System.nanoTime() - cut);
            System.out.println("wire cut mid-stream: " + e + " after " + took.toMillis() + " ms (retry bound "
                    + bound.toMillis() + " ms; the cut request took " + (cut - asked) / 1_000_000 + " ms)");
            assertRetriesExhausted(e);
            assertTrue(took.compareTo(bound.plus(SLACK)) < 0, "failed within the retry bound: " + took);
        } finally {
            sending.dispose();
            SandboxHosts.link(2, true);
        }
        echo.c.disposeNow(T);
        Resources.awaitBaseline(baseline, T, "after a connection failed on a cut wire");
    }

    /** Last: it crashes host 2. */
    @Test
    @Order(11)
    void idlePeerHostCrashIsDetectedByTheKeepalive() {
        SandboxHosts.require(2);
        Map<String, Integer> baseline = Resources.baseline();
        Duration keepalive = Duration.ofSeconds(2);
        RemoteProcess peer = echoPeer();
        Echo echo = Echo.connect(peer, SLOW_HANDSHAKE.toBuilder().keepalive(keepalive).build());
        // Idle for several keepalive periods first: probes to a live peer must not disturb anything.
        Resources.sleep(3 * keepalive.toMillis());
        echo.c.send(Payloads.message(1, 100)).block(T);
        Payloads.verify(take(echo.inbox), 1, 100);
        Duration bound = keepalive.multipliedBy(3).dividedBy(2).plus(retryBound(echo.c).multipliedBy(2));

        long asked = System.nanoTime();
        SandboxHosts.kill(2); // no DREQ, no FIN: the host is just gone, and nothing is being sent
        long crash = System.nanoTime(); // as for the wire cut: measured from the acknowledgement
        Throwable e = awaitFailure(echo.inbox, bound.plus(SLACK));
        Duration took = Duration.ofNanos(System.nanoTime() - crash);
        System.out.println("idle peer's host crashed: " + e + " after " + took.toMillis() + " ms (bound "
                + bound.toMillis() + " ms; the kill request took " + (crash - asked) / 1_000_000 + " ms)");
        assertRetriesExhausted(e);
        assertTrue(took.compareTo(bound.plus(SLACK)) < 0, "detected within the keepalive bound: " + took);
        echo.c.disposeNow(T);
        Resources.awaitBaseline(baseline, T, "after the keepalive found the peer's host dead");
    }

    /**
     * Beyond a bound, for the emulator: the peer's kernel answers at once, but the failure still has to
     * reach this JVM's loops on a loaded 2-core host.
     */
    private static final Duration SLACK = Duration.ofSeconds(3);

    /** A connection to a {@link HostsPeerMain} echo server, its advert taken. */
    private record Echo(RdmaConnection c, LinkedBlockingQueue<Object> inbox) {
        static Echo connect(RemoteProcess peer, ConnectionOptions options) {
            int port = Integer.parseInt(peer.awaitLine(l -> l.startsWith("PORT "), STARTUP).substring(5).trim());
            RdmaConnection c = RdmaConnection.connect(new InetSocketAddress(SandboxHosts.address(2), port), options)
                    .block(T);
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(inbox::add, inbox::add);
            take(inbox); // the advert
            return new Echo(c, inbox);
        }
    }

    /** The transport's retry time: ACK timeout x (retries + 1), from the QP's own attributes. */
    private static Duration retryBound(RdmaConnection c) {
        rdmaflux.verbs.QpAttributes qp = ((Connection) c).queuePairAttributes();
        assertTrue(qp.retryCount() < 7 && qp.timeout() > 0, "rxe retries forever with 7 retries or timeout 0");
        long nanos = (long) (4096.0 * (1L << qp.timeout())) * (qp.retryCount() + 1);
        return Duration.ofNanos(nanos);
    }

    /** Skips echoes until receive() fails. */
    private static Throwable awaitFailure(LinkedBlockingQueue<Object> inbox, Duration within) {
        long deadline = System.nanoTime() + within.plus(T).toNanos();
        try {
            while (System.nanoTime() < deadline) {
                Object o = inbox.poll(100, TimeUnit.MILLISECONDS);
                if (o instanceof Throwable t) {
                    return t;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        throw new AssertionError("receive() did not fail within " + within.plus(T));
    }

    private static void assertRetriesExhausted(Throwable e) {
        RdmaCmException.CompletionError ce = assertInstanceOf(RdmaCmException.CompletionError.class, e, e.toString());
        assertEquals(rdmaflux.verbs.WcStatus.RETRY_EXC_ERR, ce.wcStatus(), ce.toString());
    }

    private static List<String> mckey(InetAddress group, int host, String... more) {
        List<String> cmd = new java.util.ArrayList<>(List.of("stdbuf", "-oL", "mckey", "-m", group.getHostAddress(),
                "-b", SandboxHosts.address(host).getHostAddress()));
        cmd.addAll(List.of(more));
        return cmd;
    }

    private static byte[] take(LinkedBlockingQueue<Object> inbox) {
        return Inbox.take(inbox, T);
    }
}
