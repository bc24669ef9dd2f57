package rdmaflux.cm;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;

import reactor.core.publisher.Flux;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Test fixture: the server side of the multi-process tests, run by {@link PeerProcess} in a JVM of
 * its own. Binds on the test RDMA address, prints {@code PORT <n>} once listening, and serves until
 * killed or until its stdin closes (the parent died or is done).
 *
 * <ul>
 *   <li>{@code echo}: echoes every message on every connection ({@link EchoServer}).</li>
 *   <li>{@code echo-pool}: the same with {@link #POOL_OPTIONS} and every connection receiving into the
 *   shared receive pool {@link #POOL} ({@code ManyConnectionsIT}).</li>
 *   <li>{@code stream}: sends every connection an endless stream of 1 KiB {@link Payloads} messages.</li>
 *   <li>{@code storm}: echoes, with an accept queue of {@link #STORM_QUEUE} and a subscriber that takes a
 *   connection at a time, the next {@link #STORM_TAKE_EVERY} after the previous one closed
 *   ({@code ConnectStormIT}).</li>
 * </ul>
 */
public final class PeerMain {
    /** How long the many-connections test may take per handshake step under emulation. */
    static final ConnectionOptions OPTIONS = ConnectionOptions.defaults().toBuilder()
            .timeout(Step.ACCEPT, Duration.ofSeconds(60)).timeout(Step.CONNECT, Duration.ofSeconds(60)).build();

    /**
     * The pooled echo server's connections: 4 KiB buffers, few send buffers (each connection still has
     * its own), so 1,000 connections pin little beside the pool; they share completion queues.
     */
    static final ConnectionOptions POOL_OPTIONS = OPTIONS.toBuilder().bufferSize(4096).sendBuffers(2)
            .sharedCompletionQueue(true).build();
    /** The connections {@link #POOL} is sized for ({@code ManyConnectionsIT}). */
    static final int POOLED_CONNECTIONS = 2_000;
    /**
     * 2,000 connections' quota of 2 credits and 3 control buffers, and a reserve of 1,024 lent at most 8
     * at a time: 11,124 buffers of 4 KiB, about 43 MiB, whatever the number of connections.
     */
    static final SharedReceivePool POOL = SharedReceivePool.of(POOLED_CONNECTIONS * 5 + 1_024 + 100, 2)
            .withReserve(1_024, 8);

    /** The storm server's accept queue: small, so a storm overflows it at once. */
    static final int STORM_QUEUE = 8;
    /**
     * The storm server's subscriber takes a connection this long after the previous one closed: far
     * slower than requests arrive.
     */
    static final Duration STORM_TAKE_EVERY = Duration.ofMillis(100);
    /** Small buffers on both sides of the storm: the test is about handshakes, not throughput. */
    static final ConnectionOptions STORM_OPTIONS = OPTIONS.toBuilder().receiveBuffers(4).sendBuffers(4)
            .bufferSize(1024).build();

    private PeerMain() {
    }

    /**
     * @param args the mode: {@code echo}, {@code stream}, {@code storm} or {@code rsocket}
     * @throws IOException never in practice (reading stdin)
     */
    public static void main(String[] args) throws IOException {
        // The shared loops' protection domain, which outlives connections, exists before any test's baseline.
        Resources.sharedDomain();
        switch (args.length == 1 ? args[0] : "") {
            case "echo" -> {
                EchoServer echo = new EchoServer(OPTIONS);
                System.out.println("PORT " + echo.address().getPort());
            }
            case "echo-pool" -> {
                EchoServer echo = new EchoServer(new InetSocketAddress(RdmaTestEnv.address(), 0), POOL_OPTIONS,
                        AcceptFilter.ACCEPT_ALL, ServerOptions.builder().sharedReceivePool(POOL).build());
                System.out.println("PORT " + echo.address().getPort());
            }
            case "stream" -> {
                RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), OPTIONS,
                        AcceptFilter.ACCEPT_ALL).block(Duration.ofSeconds(60));
                server.connections().subscribe(c -> c.send(Flux.range(0, Integer.MAX_VALUE)
                        .map(i -> Payloads.message(i, 1024))).subscribe(null, e -> { }));
                System.out.println("PORT " + server.address().getPort());
            }
            case "storm" -> {
                RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), STORM_OPTIONS,
                        AcceptFilter.ACCEPT_ALL, ServerOptions.builder().acceptQueue(STORM_QUEUE).build())
                        .block(Duration.ofSeconds(60));
                server.connections().subscribe(new reactor.core.publisher.BaseSubscriber<RdmaConnection>() {
                    @Override
                    protected void hookOnSubscribe(org.reactivestreams.Subscription s) {
                        request(1);
                    }

                    @Override
                    protected void hookOnNext(RdmaConnection c) {
                        // One connection at a time: the next is taken once this one is closed (by its
                        // client, after its echo), so the application holds at most one beyond the queue.
                        EchoServer.echo(c, STORM_OPTIONS);
                        c.onDispose().then(reactor.core.publisher.Mono.delay(STORM_TAKE_EVERY))
                                .subscribe(null, e -> request(1), () -> request(1));
                    }
                });
                System.out.println("PORT " + server.address().getPort());
            }
            case "rsocket" -> {
                // An RSocket server whose request-stream never ends: RSocketIT kills this JVM under it.
                rdmaflux.cm.rsocket.RdmaCloseableServer server = io.rsocket.core.RSocketServer
                        .create(io.rsocket.SocketAcceptor.forRequestStream(p -> {
                            p.release();
                            return Flux.interval(Duration.ofMillis(10))
                                    .map(i -> io.rsocket.util.DefaultPayload.create("tick " + i));
                        }))
                        .bind(rdmaflux.cm.rsocket.RdmaServerTransport.create(
                                new InetSocketAddress(RdmaTestEnv.address(), 0)))
                        .block(Duration.ofSeconds(60));
                System.out.println("PORT " + server.address().getPort());
            }
            default -> {
                System.err.println("usage: PeerMain echo|stream|storm|rsocket");
                System.exit(2);
            }
        }
        System.out.flush();
        while (System.in.read() >= 0) {
            // serve until the parent closes our stdin
        }
        System.exit(0);
    }
}
