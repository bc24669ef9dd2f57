package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static rdmaflux.cm.MulticastTestSupport.awaitResources;
import static rdmaflux.cm.MulticastTestSupport.isPayload;
import static rdmaflux.cm.MulticastTestSupport.payload;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import rdmaflux.cm.MulticastTestSupport.Tool;
import rdmaflux.testing.RdmaTestEnv;

/** UD unicast: SIDR resolution between our endpoints and against udaddy, send and reply, errors. */
class DatagramEndpointIT {
    private static final Duration T = Duration.ofSeconds(60);
    private static final InetAddress LOCAL = RdmaTestEnv.address();

    private static RdmaDatagramEndpoint bind(int port) {
        return RdmaDatagramEndpoint.bind(new InetSocketAddress(LOCAL, port)).block(T);
    }

    @Test
    void pingPongBetweenTwoEndpoints() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        RdmaDatagramEndpoint server = bind(0);
        RdmaDatagramEndpoint client = bind(0);
        assertNotEquals(0, server.localAddress().getPort(), "port 0 picks a port");
        // The server echoes every datagram to its sender, found from the datagram's GRH and source QPN.
        Disposable echo = server.receive()
                .concatMap(d -> server.send(server.peerOf(d), d.data(), d.sourceQpn()))
                .subscribe();

        DatagramPeer peer = client.resolve(server.localAddress()).block(T);
        assertEquals(server.qpNumber(), peer.qpNumber());
        assertEquals(0x01234567, peer.qkey());
        assertEquals(server.localAddress(), peer.address());

        int n = 50;
        Flux<Datagram> replies = client.receive().take(n).cache();
        replies.subscribe();
        Flux.range(0, n).concatMap(i -> client.send(peer, payload(i, 64 + i))).then().block(T);
        List<Datagram> got = replies.collectList().block(T);
        assertEquals(n, got.size());
        for (int i = 0; i < n; i++) {
            Datagram d = got.get(i);
            assertTrue(isPayload(d, i, 64 + i), "reply " + i);
            assertEquals(server.qpNumber(), d.sourceQpn());
            assertEquals(LOCAL, d.source());
            assertEquals(LOCAL, d.destination());
            // The echo put the client's own QP number, as the server saw it, in the immediate.
            assertEquals(OptionalInt.of(client.qpNumber()), d.immediate());
        }
        // The endpoints' QPs, regions and address handles are in the shared loops' domain for the device,
        // not in one of their own: two more endpoints make no protection domain. (Relative to these two, not
        // to the baseline: the kernel also counts domains rdma_cm keeps while ids are bound.)
        int domains = MulticastTestSupport.resources().get("pd");
        RdmaDatagramEndpoint third = bind(0);
        RdmaDatagramEndpoint fourth = bind(0);
        assertEquals(domains, MulticastTestSupport.resources().get("pd"), "protection domains with four endpoints");
        third.dispose();
        fourth.dispose();
        third.onDispose().then(fourth.onDispose()).block(T);
        echo.dispose();
        client.dispose();
        server.dispose();
        client.onDispose().then(server.onDispose()).block(T);
        awaitResources(baseline, T);
    }

    @Test
    void udaddyServerAnswersAndReplies() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        int n = 10;
        try (Tool udaddy = new Tool(List.of("udaddy", "-b", LOCAL.getHostAddress(), "-C", Integer.toString(n),
                "-S", "100"))) {
            udaddy.awaitLine(l -> l.contains("starting server"), T);
            RdmaDatagramEndpoint client = bind(0);
            InetSocketAddress udaddyAddress = new InetSocketAddress(LOCAL, 7174);
            // udaddy prints before it listens: retry the resolve until its listener answers.
            DatagramPeer peer = client.resolve(udaddyAddress)
                    .retryWhen(reactor.util.retry.Retry.fixedDelay(50, Duration.ofMillis(100))
                            .filter(e -> e instanceof RdmaCmException))
                    .block(T);
            Flux<Datagram> replies = client.receive().take(n).cache();
            replies.subscribe();
            // udaddy answers to the QP number it finds in the immediate data, as its own client does.
            Flux.range(0, n).concatMap(i -> client.send(peer, payload(i, 100), client.qpNumber())).then().block(T);
            List<Datagram> got = replies.collectList().block(T);
            assertEquals(0, udaddy.exitCode(T), udaddy.output());
            assertTrue(udaddy.output().contains("data transfers complete"), udaddy.output());
            assertEquals(n, got.size());
            for (Datagram d : got) {
                assertEquals(100, d.length());
                assertEquals(peer.qpNumber(), d.sourceQpn());
                assertEquals(OptionalInt.of(peer.qpNumber()), d.immediate());
                assertEquals(LOCAL, d.source());
            }
            client.dispose();
            client.onDispose().block(T);
        }
        awaitResources(baseline, T);
    }

    @Test
    void resolvingAPortNobodyBoundFails() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        RdmaDatagramEndpoint client = bind(0);
        StepVerifier.create(client.resolve(new InetSocketAddress(LOCAL, 7199)))
                .expectErrorSatisfies(e -> assertTrue(e instanceof RdmaCmException.Unreachable, e.toString()))
                .verify(T);
        client.dispose();
        client.onDispose().block(T);
        awaitResources(baseline, T);
    }

    @Test
    void badDatagramsAreRefusedBeforePosting() throws Exception {
        Map<String, Integer> baseline = MulticastTestSupport.resources();
        RdmaDatagramEndpoint a = bind(0);
        RdmaDatagramEndpoint b = bind(0);
        DatagramPeer peer = b.resolve(a.localAddress()).block(T);
        StepVerifier.create(b.send(peer, ByteBuffer.allocate(b.maxDatagramSize() + 1)))
                .expectErrorMatches(e -> e instanceof IllegalArgumentException && e.getMessage().contains("exceeds"))
                .verify(T);
        StepVerifier.create(a.send(peer, ByteBuffer.allocate(8)))
                .expectErrorMatches(e -> e instanceof IllegalArgumentException
                        && e.getMessage().contains("another endpoint"))
                .verify(T);
        b.send(peer, payload(1, b.maxDatagramSize())).block(T);
        StepVerifier.create(a.receive().take(1))
                .expectNextMatches(d -> isPayload(d, 1, a.maxDatagramSize()))
                .expectComplete().verify(T);
        a.dispose();
        b.dispose();
        StepVerifier.create(b.send(peer, ByteBuffer.allocate(8))).expectError(IllegalStateException.class).verify(T);
        a.onDispose().then(b.onDispose()).block(T);
        awaitResources(baseline, T);
    }
}
