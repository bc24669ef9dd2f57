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
 *   <li>{@code stream}: sends every connection an endless stream of 1 KiB {@link Payloads} messages.</li>
 * </ul>
 */
public final class PeerMain {
    /** How long the many-connections test may take per handshake step under emulation. */
    static final ConnectionOptions OPTIONS = ConnectionOptions.defaults().toBuilder()
            .timeout(Step.ACCEPT, Duration.ofSeconds(60)).timeout(Step.CONNECT, Duration.ofSeconds(60)).build();

    private PeerMain() {
    }

    /**
     * @param args the mode: {@code echo} or {@code stream}
     * @throws IOException never in practice (reading stdin)
     */
    public static void main(String[] args) throws IOException {
        switch (args.length == 1 ? args[0] : "") {
            case "echo" -> {
                EchoServer echo = new EchoServer(OPTIONS);
                System.out.println("PORT " + echo.address().getPort());
            }
            case "stream" -> {
                RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), OPTIONS,
                        AcceptFilter.ACCEPT_ALL).block(Duration.ofSeconds(60));
                server.connections().subscribe(c -> c.send(Flux.range(0, Integer.MAX_VALUE)
                        .map(i -> Payloads.message(i, 1024))).subscribe(null, e -> { }));
                System.out.println("PORT " + server.address().getPort());
            }
            default -> {
                System.err.println("usage: PeerMain echo|stream");
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
