package rdmaflux.cm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.testing.RemoteProcess;
import rdmaflux.testing.SandboxHosts;

/**
 * Address resolution that finds its peer unreachable at first: this JVM on host 1 connects to an echo server
 * on host 2 ({@link HostsPeerMain} {@code echo}), or resolves its datagram endpoint, while host 2's wire is cut.
 * The kernel's neighbour probes (ARP) go unanswered and the entry fails; once the wire is back, the connect
 * (or the resolve) must complete.
 * The kernel alone probes once per rdma_resolve_addr: it retries the request early only when the entry becomes
 * reachable, which nothing here makes it, and at the request's deadline it finds the entry failed and reports
 * ETIMEDOUT. So a single attempt as long as the step fails this connect however soon the wire is back; the
 * connection resolves in attempts, each of which probes afresh.
 * Run with {@code RDMAFLUX_IT_HOSTS=2} (or more) {@code scripts/it}.
 */
class AddressResolutionHostsIT {
    private static final Duration T = Duration.ofSeconds(60);
    /** A peer JVM under emulation: tens of seconds to main at the reference speed, stretched on a slower machine. */
    private static final Duration STARTUP = RdmaTestEnv.scaled(Duration.ofSeconds(180));
    /** The address step: long enough for the failed probes, the restored wire and a fresh attempt. */
    private static final Duration ADDRESS = RdmaTestEnv.scaled(Duration.ofSeconds(30));
    /**
     * The count of an unresolved neighbour entry once the last probe of a round went out, with Linux's
     * defaults: a round starts at {@code ucast_solicit} (3) and sends {@code mcast_solicit} (3) broadcasts.
     */
    private static final int LAST_PROBE = 6;

    /** Both tests' server (a JVM's start under emulation costs most of a test). */
    private static final EchoPeer ECHO = new EchoPeer();

    private static RemoteProcess peer() {
        SandboxHosts.require(2);
        if (SandboxHosts.crashed(2)) {
            SandboxHosts.boot(2, STARTUP);
        }
        return ECHO.get();
    }

    @AfterAll
    static void stopPeer() {
        ECHO.close();
    }

    @Test
    void aConnectWhosePeerWasUnreachableCompletesOnceTheWireIsBack() throws Exception {
        int port = Integer.parseInt(peer().awaitLine(l -> l.startsWith("PORT "), STARTUP).substring(5).trim());
        ConnectionOptions options = CrossHostsIT.SLOW_HANDSHAKE.toBuilder().timeout(Step.ADDRESS, ADDRESS).build();
        // The connect ends by itself within its steps' timeouts: resolved, or failed with a typed error.
        Duration steps = options.timeout(Step.ADDRESS).plus(options.timeout(Step.ROUTE))
                .plus(options.timeout(Step.CONNECT));
        RdmaConnection c = afterAFailedProbeRound("the connect", steps,
                () -> RdmaConnection.connect(new InetSocketAddress(SandboxHosts.address(2), port), options));
        try {
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(inbox::add, inbox::add);
            Inbox.take(inbox, T); // the echo peer's advertisement comes first
            c.send(Flux.just(Payloads.message(7, 100))).block(T);
            Payloads.verify(Inbox.take(inbox, T), 7, 100);
        } finally {
            c.disposeNow(T);
        }
    }

    @Test
    void aDatagramPeerWhoseHostWasUnreachableResolvesOnceTheWireIsBack() throws Exception {
        int port = Integer.parseInt(peer().awaitLine(l -> l.startsWith("UDPORT "), STARTUP).substring(7).trim());
        DatagramOptions options = DatagramOptions.builder().addressTimeout(ADDRESS)
                .resolveTimeout(ADDRESS.plus(T)).build();
        RdmaDatagramEndpoint ep = RdmaDatagramEndpoint.bind(new InetSocketAddress(SandboxHosts.address(1), 0),
                options).block(T);
        try {
            DatagramPeer there = afterAFailedProbeRound("the resolve", options.resolveTimeout(),
                    () -> ep.resolve(new InetSocketAddress(SandboxHosts.address(2), port)));
            Flux<Datagram> reply = ep.receive().take(1).cache();
            reply.subscribe();
            ep.send(there, MulticastTestSupport.payload(3, 64)).block(T);
            Datagram d = reply.blockFirst(T);
            assertTrue(MulticastTestSupport.isPayload(d, 3, 64), "the echo");
        } finally {
            ep.disposeNow(T);
        }
    }

    /**
     * Starts {@code operation} with host 2's wire cut and host 1's neighbour entry for it flushed, restores the
     * wire once a whole round of probes went unanswered, and returns what the operation completes with.
     */
    private static <V> V afterAFailedProbeRound(String what, Duration bound, Supplier<Mono<V>> operation)
            throws Exception {
        String peerAddress = SandboxHosts.address(2).getHostAddress();
        CompletableFuture<V> done;
        long start;
        SandboxHosts.link(2, false);
        try {
            // The entry a test before this one left would answer at once: resolution must start from none.
            ip("neigh", "flush", "to", peerAddress);
            start = System.nanoTime();
            done = operation.get().toFuture();
            // The last probe of a round sent into the cut wire: the round fails, and the kernel alone would
            // not probe again before the request's deadline. The entry is FAILED only until the next attempt
            // starts a round, so the probe count is what a poll can see.
            await().atMost(ADDRESS).pollInterval(Duration.ofMillis(200))
                    .until(() -> probes(peerAddress) >= LAST_PROBE || done.isDone());
            assertTrue(!done.isDone(), () -> what + " ended while the wire was cut: " + done);
        } finally {
            SandboxHosts.link(2, true);
        }
        long back = System.nanoTime();
        try {
            V v = done.get(bound.toMillis(), TimeUnit.MILLISECONDS);
            System.out.printf("%s: a round of probes unanswered after %d ms; done %d ms after the wire was back%n",
                    what, (back - start) / 1_000_000, (System.nanoTime() - back) / 1_000_000);
            return v;
        } catch (java.util.concurrent.ExecutionException e) {
            throw new AssertionError(what + " failed although the wire was back "
                    + (System.nanoTime() - back) / 1_000_000 + " ms before: " + e.getCause(), e.getCause());
        }
    }

    /**
     * {@return the probe count of host 1's neighbour entry for {@code address} ({@code ip -s neigh show}) while
     * the entry is unresolved, else 0}
     */
    private static int probes(String address) throws IOException, InterruptedException {
        String entry = ip("-s", "neigh", "show", "to", address);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("probes (\\d+) (INCOMPLETE|FAILED)").matcher(entry);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    /** {@return what {@code ip} printed; fails unless it succeeded} */
    private static String ip(String... args) throws IOException, InterruptedException {
        IpCommand.Result r = IpCommand.run(args);
        assertEquals(0, r.exit(), () -> r.command() + ": " + r.output());
        return r.output();
    }
}
