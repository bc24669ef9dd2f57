package rdmaflux.samples.docs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.Datagram;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.MulticastSender;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMulticast;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.SendOp;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QpEndpoint;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WcOpcode;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * Runs the code the documentation shows on real RDMA: every snippet method of
 * {@code rdmaflux.samples.docs} that touches a device, and docs/examples/HelloRdma.java through the
 * source launcher, as getting-started.md tells a newcomer to run it.
 */
class DocSnippetsIT {
    /** Generous: the first connection of a JVM under emulation loads most of Reactor and rdmaflux. */
    private static final Duration WARM_UP = Duration.ofSeconds(120);
    private static final Duration T = Duration.ofSeconds(30);
    private static InetAddress address;

    /**
     * The snippets wait 10 s per step, as an application on real hardware would; class loading and
     * the shared loops' start under the sandbox's emulated CPU must not count against that.
     */
    @BeforeAll
    static void warmUp() {
        address = RdmaTestEnv.address();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0)).block(WARM_UP);
        RdmaConnection c = RdmaConnection.connect(server.address()).block(WARM_UP);
        c.send(ByteBuffer.wrap(new byte[8])).block(WARM_UP);
        c.disposeNow(WARM_UP);
        server.disposeNow(WARM_UP);
    }

    @Test
    void springRequesterOverRdma() {
        assertEquals("hello, RDMA", SpringSnippets.requester(address));
    }

    @Test
    void rsocketRequestResponse() {
        assertEquals("hello, RDMA", RSocketSnippets.requestResponse(address));
    }

    @Test
    void rsocketResumableRequestResponse() {
        assertEquals("hello, RDMA", RSocketSnippets.resumable(address));
    }

    @Test
    void readmeEcho() {
        assertEquals("hello, RDMA", ReactiveSnippets.readme(address));
    }

    @Test
    void apiOwnLoopsWithTransportOptionsAreDisposedWithTheirConnections() {
        assertEquals(List.of(16, true), ReactiveSnippets.ownLoops(address));
    }

    @Test
    void apiReconnectOutlivesTheServersRestart() {
        assertEquals("back again", ReactiveSnippets.reconnect(address));
    }

    @Test
    void apiGuardedServerAcceptsTheTokenAndRefusesAGuess() {
        assertEquals(List.of("hello", true), ReactiveSnippets.guardedServer(address));
    }

    @Test
    void apiClientGetsAllThreeReplies() {
        assertEquals(List.of("a", "b", "c"), ReactiveSnippets.clientAndServer(address, 7481));
    }

    /**
     * The send's and the receive's operators see the value set before them, on a signal thread. The snippet
     * leaves automatic context propagation on; it is turned off again for the tests after it.
     */
    @Test
    void apiContextReachesTheOperators() throws InterruptedException {
        try {
            List<String> seen = ReactiveSnippets.contextPropagation(address);
            assertEquals(2, seen.size(), seen.toString());
            for (String s : seen) {
                assertTrue(s.startsWith("42 ") && !s.endsWith(" " + Thread.currentThread().getName()), s);
            }
        } finally {
            reactor.core.publisher.Hooks.disableAutomaticContextPropagation();
        }
    }

    /** The snippet grants the client a read, the client reads and says so; after the revoke its read fails. */
    @Test
    void apiGrantIsRevoked() throws Exception {
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0)).block(T);
        AtomicReference<RdmaConnection> accepted = new AtomicReference<>();
        server.connections().subscribe(accepted::set);
        RdmaConnection client = RdmaConnection.connect(server.address()).block(T);
        try (Arena arena = Arena.ofShared()) {
            RdmaConnection owner = await(accepted);
            MemorySegment memory = arena.allocate(8192, 4096);
            memory.setString(0, "granted", StandardCharsets.UTF_8);
            java.util.concurrent.CompletableFuture<RemoteBuffer> snippet =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> ReactiveSnippets.grant(owner, memory));
            RemoteBuffer granted = RemoteBuffer.readFrom(ByteBuffer.wrap(client.receiveBytes().blockFirst(T)));
            RegisteredBuffer local = client.register(arena.allocate(4096, 4096), AccessFlags.LOCAL_WRITE);
            client.read(local, granted).block(T);
            assertEquals("granted", local.segment().getString(0, StandardCharsets.UTF_8));
            client.send(ByteBuffer.wrap(new byte[] {1})).block(T);
            assertEquals(granted, snippet.get(30, TimeUnit.SECONDS));
            reactor.test.StepVerifier.create(client.read(local, granted)).expectErrorSatisfies(e -> assertEquals(
                    rdmaflux.verbs.WcStatus.REM_ACCESS_ERR,
                    ((rdmaflux.cm.RdmaCmException.CompletionError) e).wcStatus())).verify(T);
            owner.disposeNow(T);
        } finally {
            client.disposeNow(T);
            server.disposeNow(T);
        }
    }

    /** The peer registers memory and sends its descriptor; the snippet writes, reads and runs atomics on it. */
    @Test
    void apiOneSidedOperations() throws InterruptedException {
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0)).block(T);
        AtomicReference<RdmaConnection> accepted = new AtomicReference<>();
        server.connections().subscribe(accepted::set);
        RdmaConnection client = RdmaConnection.connect(server.address()).block(T);
        try (Arena arena = Arena.ofShared()) {
            RdmaConnection peerSide = await(accepted);
            RegisteredBuffer peerMemory = peerSide.register(arena.allocate(8192, 8), AccessFlags.REMOTE_ALL);
            try {
                BlockingQueue<String> atPeer = new LinkedBlockingQueue<>();
                peerSide.receive().subscribe(m -> {
                    atPeer.add(m.isWriteNotification() ? "imm " + m.immediate() : "bytes " + m.length());
                    m.release();
                });
                ByteBuffer desc = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
                peerMemory.remote().writeTo(desc);
                peerSide.send(desc.flip()).block(T);
                RemoteBuffer peer = RemoteBuffer.readFrom(ByteBuffer.wrap(client.receiveBytes().blockFirst(T)));

                ReactiveSnippets.OneSided r = ReactiveSnippets.oneSided(client, peer);

                assertEquals(new ReactiveSnippets.OneSided("hello, peer", 0, 0), r);
                MemorySegment p = peerMemory.segment();
                assertEquals("hello, peer", p.getString(0, StandardCharsets.UTF_8));
                assertEquals(1, p.get(ValueLayout.JAVA_LONG, 4096), "compare-and-swap stored 1");
                assertEquals(10, p.get(ValueLayout.JAVA_LONG, 4104), "fetch-and-add added 10");
                assertEquals("bytes " + RemoteBuffer.ENCODED_SIZE, atPeer.poll(30, TimeUnit.SECONDS));
                assertEquals("imm 42", atPeer.poll(30, TimeUnit.SECONDS));
            } finally {
                peerMemory.close(); // before the arena: this test follows the rule the snippet states
                peerSide.disposeNow(T);
            }
        } finally {
            client.disposeNow(T);
            server.disposeNow(T);
        }
    }

    @Test
    void availability() {
        assertTrue(VerbsSnippets.availabilityCheck());
        VerbsSnippets.availability();
    }

    @Test
    void devicesListTheTestDevicesRoceV2Gid() {
        List<String> lines = VerbsSnippets.devices();
        assertTrue(lines.stream().anyMatch(l -> l.startsWith(RdmaTestEnv.device() + " fw ")
                && l.contains(" port 1 ACTIVE ") && l.contains("gid[")), lines.toString());
    }

    /** Two QPs of one process connected through the snippet's exchange, looped back; then an RDMA WRITE. */
    @Test
    void connectByHandThenWrite() {
        try (Arena arena = Arena.ofShared(); RdmaContext ctx = Rdma.open(RdmaTestEnv.device())) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cqA = ctx.createCompletionQueue(16, null, 0);
            CompletionQueue cqB = ctx.createCompletionQueue(16, null, 0);
            QueuePair a = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cqA).build());
            QueuePair b = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cqB).build());
            MemoryRegion mrA = pd.register(arena.allocate(8192, 4096), AccessFlags.REMOTE_ALL);
            MemoryRegion mrB = pd.register(arena.allocate(8192, 4096), AccessFlags.REMOTE_ALL);

            // a's exchange connects b, which receives a's endpoint and answers with its own.
            VerbsSnippets.connect(a, 0x111, mineA -> {
                QpEndpoint[] mineB = new QpEndpoint[1];
                VerbsSnippets.connect(b, 0x222, endpointB -> {
                    mineB[0] = endpointB;
                    return mineA;
                });
                return mineB[0];
            });

            for (int i = 0; i < 4096; i++) {
                mrA.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
            }
            List<String> handled = new ArrayList<>();
            VerbsSnippets.dataPath(a, cqA, mrA, mrB.toRemoteBuffer(), 77,
                    (wrId, opcode, bytes) -> handled.add(wrId + " " + opcode));
            assertEquals(List.of("77 " + WcOpcode.RDMA_WRITE), handled);
            assertArrayEquals(mrA.segment().asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE),
                    mrB.segment().asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0, mrB.segment().get(ValueLayout.JAVA_BYTE, 4096), "nothing written past 4 KiB");
        }
    }

    /** docs/verbs.md's extended-post batch: the write lands, the SEND with immediate 42 is received. */
    @Test
    void verbsExtendedPost() {
        try (RcPair p = RcPair.openExtended(EnumSet.of(SendOp.RDMA_WRITE, SendOp.SEND_WITH_IMM))) {
            ReceiveRequests recv = new ReceiveRequests(1, 1);
            recv.set(0, 9).sge(0, 0, p.b.mr, 8192, 8);
            p.b.qp.postReceive(recv, 1);
            for (int i = 0; i < 4096; i++) {
                p.a.buffer.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3));
            }
            VerbsSnippets.extendedPost(p.a.qp, p.a.mr, p.b.mr.toRemoteBuffer());
            assertEquals(1, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(2, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(42, Completions.awaitSuccess(p.b.cq, T).immediateData(0));
            assertArrayEquals(p.a.buffer.asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE),
                    p.b.buffer.asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /** docs/verbs.md's window: the peer reads the granted bytes, and nothing once the grant is revoked. */
    @Test
    void verbsMemoryWindow() {
        try (RcPair p = RcPair.open()) {
            p.b.buffer.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            RemoteBuffer grant = VerbsSnippets.grantWindow(p.pd, p.b.qp, p.b.buffer);
            assertEquals(1, Completions.awaitSuccess(p.b.cq, T).wrId(0));
            SendRequests read = new SendRequests(1, 1);
            read.set(0, 5, SendOpcode.RDMA_READ, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, p.a.mr, 0, 8)
                    .rdma(0, grant.address(), grant.rkey());
            p.a.qp.postSend(read, 1);
            assertEquals(5, Completions.awaitSuccess(p.a.cq, T).wrId(0));
            assertEquals(0x1122334455667788L, p.a.buffer.get(ValueLayout.JAVA_LONG, 0));

            VerbsSnippets.revokeWindow(p.b.qp, grant);
            assertEquals(2, Completions.awaitSuccess(p.b.cq, T).wrId(0));
            p.a.qp.postSend(read, 1);
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.a.cq, wc, T);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(0), wc.describe(0));
        }
    }

    /** README's hand-connected QP sends to a peer QP on a second context of the same device. */
    @Test
    void readmeVerbsSend() {
        QpConnectOptions opts = QpConnectOptions.DEFAULTS;
        try (Arena arena = Arena.ofShared(); RdmaContext ctx = Rdma.open(RdmaTestEnv.device())) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(16, null, 0);
            QueuePair qp = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).build());
            MemoryRegion mr = pd.register(arena.allocate(4096), AccessFlags.LOCAL_WRITE);
            String completion = VerbsSnippets.readme(RdmaTestEnv.device(), mine -> {
                qp.connect(mine, 0x5678, opts);
                qp.postReceive(new ReceiveRequests(1, 1).set(0, 9).sge(0, 0, mr, 0, 4096), 1);
                return qp.localEndpoint(opts, 0x5678);
            });
            assertTrue(completion.contains("status=SUCCESS") && completion.contains("opcode=SEND"), completion);
            WorkCompletions wc = Completions.awaitSuccess(cq, T);
            assertEquals(9, wc.wrId(0));
            assertEquals(64, wc.byteLength(0));
            assertEquals("hello over RC", mr.segment().getString(0, StandardCharsets.UTF_8));
        }
    }

    /** The synchronous CM client against a reactive server that takes raw private data. */
    @Test
    void connectionManagerClient() {
        List<byte[]> privateData = new CopyOnWriteArrayList<>();
        ConnectionOptions raw = ConnectionOptions.builder().protocol(ConnectionOptions.Protocol.RAW).build();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0), raw, (peer, data) -> {
            privateData.add(data);
            return AcceptFilter.Decision.accept();
        }).block(T);
        List<RdmaConnection> accepted = new CopyOnWriteArrayList<>();
        server.connections().subscribe(accepted::add);
        try {
            List<CmEvent> events = VerbsSnippets.connectionManager(server.address());
            assertEquals(List.of(CmEventType.ADDR_RESOLVED, CmEventType.ROUTE_RESOLVED, CmEventType.ESTABLISHED,
                    CmEventType.DISCONNECTED), events.stream().map(e -> e == null ? null : e.type()).toList());
            assertEquals(1, privateData.size());
            assertEquals("hi", new String(privateData.getFirst(), 0, 2, StandardCharsets.UTF_8));
        } finally {
            accepted.forEach(c -> c.disposeNow(T));
            server.disposeNow(T);
        }
    }

    @Test
    void metricsTurnedOn() {
        String scrape = MetricsSnippets.turnOn(new InetSocketAddress(address, 0));
        assertTrue(Pattern.compile("(?m)^rdmaflux_connects_total\\{[^}]*outcome=\"success\"[^}]*} 1\\.0$")
                .matcher(scrape).find(), scrape);
        Matcher devices = Pattern.compile("(?m)^rdmaflux_devices(?:\\{[^}]*})? ([0-9.]+)$").matcher(scrape);
        assertTrue(devices.find(), scrape);
        assertTrue(Double.parseDouble(devices.group(1)) >= 1, scrape);
        assertTrue(Pattern.compile("(?m)^rdmaflux_port_state\\{[^}]*device=\"" + Pattern.quote(RdmaTestEnv.device())
                + "\"[^}]*} 4\\.0$").matcher(scrape).find(), "port ACTIVE:\n" + scrape);
    }

    /** The observations example: each rdmaflux observation under the application's one it was made in. */
    @Test
    void metricsObserved() {
        io.micrometer.observation.ObservationRegistry observations = io.micrometer.observation.ObservationRegistry.create();
        Map<String, String> parents = new java.util.concurrent.ConcurrentHashMap<>();
        observations.observationConfig().observationHandler(new io.micrometer.observation.ObservationHandler<>() {
            @Override
            public boolean supportsContext(io.micrometer.observation.Observation.Context context) {
                return true;
            }

            @Override
            public void onStop(io.micrometer.observation.Observation.Context context) {
                var parent = context.getParentObservation();
                parents.put(context.getName(), parent == null ? "none" : parent.getContextView().getName());
            }
        });
        MetricsSnippets.observed(observations, new io.micrometer.core.instrument.simple.SimpleMeterRegistry(),
                new InetSocketAddress(address, 0));
        org.awaitility.Awaitility.await("the accept's observation").atMost(T)
                .until(() -> parents.containsKey("rdmaflux.accept"));
        assertEquals(Map.of("rdmaflux.accept", "orders.server", "rdmaflux.connect", "orders.request",
                "rdmaflux.operation", "orders.request", "orders.request", "none", "orders.server", "none"), parents);
    }

    /** The sender may start before the receiver's join is in place, so only order and content are certain. */
    @Test
    void multicastExample() throws IOException {
        List<String> received = MulticastSnippets.example(address);
        System.out.println("multicast example: " + received.size() + " of 100 datagrams arrived after the join");
        assertTrue(received.size() <= 100, received.toString());
        for (int i = 1; i < received.size(); i++) {
            assertTrue(number(received.get(i)) > number(received.get(i - 1)), received.toString());
        }
    }

    private static int number(String tick) {
        assertTrue(tick.matches("tick \\d+"), tick);
        return Integer.parseInt(tick.substring(5));
    }

    @Test
    void multicastJoinReceivesAllTen() throws IOException {
        InetAddress group = InetAddress.getByName("239.1.1.7");
        MulticastOptions options = MulticastOptions.builder().localAddress(address).build();
        List<String> got = new CopyOnWriteArrayList<>();
        MulticastSnippets.join(group, options, () -> {
            MulticastSender sender = RdmaMulticast.sender(group, options).block(T);
            try {
                sender.send(Flux.range(0, 10).map(i -> ByteBuffer.wrap(("d" + i).getBytes(StandardCharsets.UTF_8))))
                        .block(T);
            } finally {
                sender.disposeNow(T);
            }
        }, (Datagram d) -> got.add(new String(d.toByteArray(), StandardCharsets.UTF_8)));
        assertEquals(List.of("d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"), got);
    }

    @Test
    void unicastDatagramEcho() throws InterruptedException {
        assertEquals("ping", MulticastSnippets.unicast(address));
    }

    /**
     * getting-started.md's first program, run as a newcomer runs it: the source launcher compiles the
     * file and runs it on the samples' class path (what {@code scripts/sample --file} does).
     */
    @Test
    void helloRdmaRunsFromSource() throws IOException, InterruptedException {
        Path root = DocSnippets.findRoot(Path.of(""));
        Path samples = root.resolve("samples/target");
        String classPath = samples.resolve("classes") + ":"
                + Files.readString(samples.resolve("runtime-classpath.txt")).strip();
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-ea", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", classPath, root.resolve("docs/examples/HelloRdma.java").toString(), address.getHostAddress());
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "HelloRdma did not exit");
        String text = new String(out, StandardCharsets.UTF_8);
        System.out.print(text);
        assertEquals(0, p.exitValue(), text);
        assertTrue(text.contains("server: listening on "), text);
        assertTrue(text.contains("client: got \"hello, RDMA\" back"), text);
        assertFalse(text.contains("WARNING"), "no JVM or library warning expected:\n" + text);
    }

    private static <T> T await(AtomicReference<T> ref) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        while (ref.get() == null && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertNotNull(ref.get(), "nothing within " + T);
        return ref.get();
    }
}
