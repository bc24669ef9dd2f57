package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * Test fixture: the peer side of {@link CrossHostsIT}, started on another host of the multi-host sandbox
 * by {@link rdmaflux.testing.SandboxHosts#startJava}. Works on its own host's address (the sandbox sets
 * it as the test address there) and runs until killed or done.
 *
 * <ul>
 *   <li>{@code serve [PORT]}: a server (on PORT, default any); every connection first gets an advert of
 *       two registered buffers (a {@link #REGION}-byte region holding {@code Payloads.message(1, REGION)} and an 8-byte word holding
 *       {@link #WORD_START}), then every message it sends is echoed. Prints {@code PORT <n>}.</li>
 *   <li>{@code echo}: that server on any port, and a UD endpoint that sends every datagram back to its
 *       sender (prints {@code UDPORT <n>} too), in one JVM, which the tests that only need a live echo
 *       peer share (a JVM's start under emulation costs more than most of those tests).</li>
 *   <li>{@code rsocket}: an RSocket server with resumption ({@link RSocketResumeHostsIT#resume}) on the
 *       RDMA transport, whose request-stream sends the asked number of sequence-numbered items. Prints
 *       {@code PORT <n>}.</li>
 *   <li>{@code chaos PORT GROUP STOPFILE [HOST:PORT...]}: a chaos run's peer ({@link ChaosPeer}).</li>
 *   <li>{@code mcast GROUP COUNT}: joins the group, prints {@code JOINED}, then prints {@code GOT <seq>}
 *       for each of COUNT datagrams that are exactly {@code MulticastTestSupport.payload(seq, 100)} and
 *       exits 0.</li>
 * </ul>
 */
public final class HostsPeerMain {
    static final int REGION = 64 * 1024;
    static final long WORD_START = 42;
    private static final Duration T = Duration.ofSeconds(60);

    private HostsPeerMain() {
    }

    /**
     * @param args the mode and its arguments
     * @throws Exception when the peer fails: it exits non-zero with the stack trace
     */
    public static void main(String[] args) throws Exception {
        switch (args.length > 0 ? args[0] : "") {
            case "serve" -> serve(args.length > 1 ? Integer.parseInt(args[1]) : 0);
            case "echo" -> {
                serve(0);
                udEcho();
            }
            case "rsocket" -> rsocket();
            case "chaos" -> {
                ChaosPeer.run(Integer.parseInt(args[1]), InetAddress.getByName(args[2]), java.nio.file.Path.of(args[3]),
                        List.of(args).subList(4, args.length));
                System.exit(0);
            }
            case "mcast" -> {
                mcast(InetAddress.getByName(args[1]), Integer.parseInt(args[2]));
                return;
            }
            default -> {
                System.err.println("usage: HostsPeerMain serve [PORT] | echo | rsocket | mcast GROUP COUNT"
                        + " | chaos PORT GROUP STOPFILE [HOST:PORT...]");
                System.exit(2);
            }
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    /** The echo server on this host's sandbox address and {@code port} (0: any free one). */
    static RdmaServer serve(int port) {
        return serve(new InetSocketAddress(RdmaTestEnv.address(), port));
    }

    /**
     * The echo server on {@code address}: each connection first gets an advert of a registered region and a
     * word it may read, write and update atomically, then an echo of every message.
     */
    static RdmaServer serve(InetSocketAddress address) {
        RdmaServer server = RdmaServer.bind(address, CrossHostsIT.SLOW_HANDSHAKE, AcceptFilter.ACCEPT_ALL).block(T);
        server.connections().subscribe(c -> {
            // The connection's memory goes with it: a chaos run or soak makes thousands of connections.
            Arena arena = Arena.ofShared();
            c.onDispose().subscribe(null, e -> arena.close(), arena::close);
            MemorySegment region = arena.allocate(REGION, 4096);
            MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(1, REGION)), 0, region, 0, REGION);
            MemorySegment word = arena.allocate(64, 64);
            word.set(ValueLayout.JAVA_LONG, 0, WORD_START);
            ByteBuffer advert = ByteBuffer.allocate(2 * RemoteBuffer.ENCODED_SIZE);
            c.register(region, AccessFlags.REMOTE_ALL).remote().writeTo(advert);
            c.register(word, AccessFlags.REMOTE_ALL).slice(0, 8).remote().writeTo(advert);
            c.send(advert.flip())
                    .thenMany(c.receive().concatMap(m -> c.send(m.asByteBuffer()).doFinally(s -> m.release())))
                    // A failure on this side is said (stderr, in the run's log): the client sees only its effect,
                    // the connection's close, and a chaos run's judge needs the cause of a close no fault explains.
                    .subscribe(null, e -> System.err.println("echo-server: " + c + " failed at "
                            + System.currentTimeMillis() + ": " + e), c::dispose);
        });
        System.out.println("PORT " + server.address().getPort());
        System.out.flush();
        return server;
    }

    private static void udEcho() {
        RdmaDatagramEndpoint ep = RdmaDatagramEndpoint.bind(new InetSocketAddress(RdmaTestEnv.address(), 0)).block(T);
        ep.receive().concatMap(d -> ep.send(ep.peerOf(d), d.data())).subscribe();
        System.out.println("UDPORT " + ep.localAddress().getPort());
        System.out.flush();
    }

    private static void rsocket() {
        rdmaflux.cm.rsocket.RdmaCloseableServer server = io.rsocket.core.RSocketServer
                .create(io.rsocket.SocketAcceptor.with(RSocketResumeHostsIT.responder()))
                .resume(RSocketResumeHostsIT.resume("server"))
                .bind(rdmaflux.cm.rsocket.RdmaServerTransport.create(new InetSocketAddress(RdmaTestEnv.address(), 0),
                        RSocketResumeHostsIT.options(), AcceptFilter.ACCEPT_ALL))
                .block(T);
        System.out.println("PORT " + server.address().getPort());
        System.out.flush();
    }

    private static void mcast(InetAddress group, int count) {
        MulticastMembership m = RdmaMulticast.join(group, MulticastOptions.builder()
                        .localAddress(RdmaTestEnv.address()).joinTimeout(CrossHostsIT.JOIN).build())
                .block(CrossHostsIT.JOIN);
        System.out.println("JOINED");
        System.out.flush();
        List<Datagram> got = m.datagrams().take(count).doOnNext(d -> {
            int seq = MulticastTestSupport.seq(d);
            if (!MulticastTestSupport.isPayload(d, seq, 100)) {
                throw new IllegalStateException("corrupt datagram " + seq);
            }
            System.out.println("GOT " + seq);
            System.out.flush();
        }).collectList().block(Duration.ofMinutes(5));
        System.out.println("DONE " + got.size());
        m.dispose();
        m.onDispose().block(T);
        System.exit(0);
    }
}
