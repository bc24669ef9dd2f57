package rdmaflux.samples.docs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.context.ContextRegistry;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaGrant;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaRetry;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.ServerOptions;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * The reactive API's examples in README.md and docs/api.md. Every method runs on the calling thread and
 * blocks (with a timeout) until its example is done; {@code DocSnippetsIT} runs each on real RDMA.
 */
public final class ReactiveSnippets {
    private ReactiveSnippets() {
    }

    /**
     * README.md: a server that echoes, a client that sends one message and waits for the echo.
     *
     * @param address an IP address of an RDMA interface
     * @return the echo the client received
     */
    public static String readme(InetAddress address) {
        // tag::readme[]
        Duration timeout = Duration.ofSeconds(10);
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0),   // 0: any free port
                ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL).block(timeout);
        server.connections()                                 // every accepted connection ...
                .flatMap(c -> c.receive().concatMap(msg -> { // ... echoes every message
                    ByteBuffer copy = ByteBuffer.wrap(msg.toByteArray());
                    msg.release();                  // re-posts the receive buffer, returns a credit
                    return c.send(copy);
                }))
                .subscribe();

        String echo = Mono.usingWhen(RdmaConnection.connect(server.address()),
                        client -> client.send(ByteBuffer.wrap("hello, RDMA".getBytes(StandardCharsets.UTF_8)))
                                .then(client.receiveBytes().next()),          // the first message back
                        client -> {                                           // closed once the echo is in
                            client.dispose();
                            return client.onDispose();
                        })
                .map(bytes -> new String(bytes, StandardCharsets.UTF_8))
                .block(timeout);
        System.out.println("echo: " + echo);
        server.disposeNow(timeout);
        // end::readme[]
        return echo;
    }

    /**
     * docs/api.md: the echo server and a client that sends three messages and waits for the three replies.
     *
     * @param address an IP address of an RDMA interface
     * @param port the RDMA CM port to listen on
     * @return the replies, in order
     */
    public static List<String> clientAndServer(InetAddress address, int port) {
        // tag::client-server[]
        Duration timeout = Duration.ofSeconds(10);

        // Server: echo every message back.
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, port),
                ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL).block(timeout);
        server.connections()
                .flatMap(conn -> conn.receive().concatMap(msg -> {
                    ByteBuffer copy = ByteBuffer.wrap(msg.toByteArray());
                    msg.release();                           // re-posts the buffer, returns a credit
                    return conn.send(copy);
                }))
                .subscribe();

        // Client: connect, send three messages, wait for the three replies, close.
        RdmaConnection c = RdmaConnection.connect(new InetSocketAddress(address, port)).block(timeout);
        c.send(Flux.just("a", "b", "c").map(s -> ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8))))
                .block(timeout);
        List<String> replies = c.receiveBytes()       // messages that arrived before subscribing are kept
                .map(b -> new String(b, StandardCharsets.UTF_8))
                .take(3)
                .collectList()
                .block(timeout);
        c.disposeNow(timeout);                        // only now: the replies have arrived
        server.disposeNow(timeout);
        // end::client-server[]
        return replies;
    }

    /**
     * What {@link #oneSided} saw.
     *
     * @param readBack the first bytes of the peer's memory read back with RDMA READ
     * @param casOld the value compare-and-swap found
     * @param faaBefore the value fetch-and-add found
     */
    public record OneSided(String readBack, long casOld, long faaBefore) {
    }

    /**
     * docs/api.md and docs/security.md: revocable remote access. Grants the peer a read of the first 4 KiB of
     * {@code memory}, sends it the descriptor, waits for any message from it, then revokes.
     *
     * @param conn an established connection
     * @param memory at least 4 KiB of native memory
     * @return what the peer was granted (dead when this returns)
     */
    public static RemoteBuffer grant(RdmaConnection conn, MemorySegment memory) {
        // tag::grant[]
        Duration timeout = Duration.ofSeconds(10);
        // No remote access of its own: the peer reaches this memory only through grants.
        RegisteredBuffer shared = conn.register(memory, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.MW_BIND));
        RdmaGrant grant = conn.grant(shared.slice(0, 4096), AccessFlags.of(AccessFlag.REMOTE_READ)).block(timeout);
        ByteBuffer desc = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
        grant.remote().writeTo(desc);
        conn.send(desc.flip()).block(timeout);   // the peer reads through grant.remote() ...
        conn.receiveBytes().blockFirst(timeout); // ... until it says it is done
        grant.revoke().block(timeout);           // from here its reads with that key fail
        shared.close();                          // no grant holds it: deregistered now
        // end::grant[]
        return grant.remote();
    }

    /**
     * docs/api.md: one-sided operations against a peer's registered memory. The peer must have
     * registered at least 4112 bytes with remote access and sent its descriptor.
     *
     * @param conn an established connection
     * @param peer the peer's memory, as its descriptor arrived
     * @return what the operations returned
     */
    public static OneSided oneSided(RdmaConnection conn, RemoteBuffer peer) {
        // tag::one-sided[]
        Duration timeout = Duration.ofSeconds(10);
        // Resources close in reverse order: the registration before the arena that owns its memory.
        // Once the peer has the rkey it may write at any time, so the memory must stay allocated until
        // the registration is closed (or the connection disposed, which closes it too).
        try (Arena arena = Arena.ofShared();
             RegisteredBuffer mine = conn.register(arena.allocate(1 << 20, 8), AccessFlags.REMOTE_ALL)) {
            // Tell the peer where it is:
            ByteBuffer desc = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
            mine.remote().writeTo(desc);
            conn.send(desc.flip()).block(timeout);

            // With the peer's descriptor (received the same way, RemoteBuffer.readFrom):
            mine.segment().setString(0, "hello, peer", StandardCharsets.UTF_8);
            conn.write(mine.slice(0, 4096), peer.slice(0, 4096)).block(timeout);      // peer not notified
            conn.writeWithImmediate(mine.slice(0, 64), peer, 42).block(timeout);      // peer's receive() sees 42
            conn.read(mine.slice(8192, 4096), peer.slice(0, 4096)).block(timeout);    // RDMA read
            long old = conn.compareAndSwap(peer.slice(4096, 8), 0, 1).block(timeout); // 8-byte aligned words
            long before = conn.fetchAndAdd(peer.slice(4104, 8), 10).block(timeout);
            String readBack = mine.segment().getString(8192, StandardCharsets.UTF_8);
            return new OneSided(readBack, old, before);
        }
        // end::one-sided[]
    }

    /**
     * docs/api.md: connections on loops of their own, with transport options, and the loops disposed.
     *
     * @param address an IP address of an RDMA interface
     * @return the client's RDMA reads in flight, and whether disposing the loops closed it
     */
    public static List<Object> ownLoops(InetAddress address) {
        // tag::loops[]
        Duration timeout = Duration.ofSeconds(10);
        RdmaLoops loops = RdmaLoops.create("myapp", 2);     // threads myapp-cm, myapp-completion-0 and -1,
        // myapp-signal-0 and -1; myapp-cm-server starts with the server below
        ConnectionOptions options = ConnectionOptions.builder()
                .loops(loops)
                .initiatorDepth(16)   // RDMA reads/atomics in flight; the device's maximum by default
                .ackTimeout(14)       // retransmit after 4.096 us x 2^14 = 67 ms without an ACK
                .build();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0), options, AcceptFilter.ACCEPT_ALL)
                .block(timeout);
        RdmaConnection client = RdmaConnection.connect(server.address(), options).block(timeout);
        int depth = client.initiatorDepth();                 // 16: what the QP was established with
        loops.disposeNow(timeout);                           // closes the client and the server, ends the threads
        // end::loops[]
        return List.of(depth, client.isDisposed() && server.isDisposed());
    }
    /**
     * docs/api.md: a client that keeps connecting until its server listens again, with a keepalive.
     *
     * @param address an IP address of an RDMA interface
     * @return the echo the client got from the server that came back
     */
    public static String reconnect(InetAddress address) {
        Duration timeout = Duration.ofSeconds(30);
        RdmaServer gone = RdmaServer.bind(new InetSocketAddress(address, 0)).block(timeout);
        InetSocketAddress serverAddress = gone.address();
        gone.disposeNow(timeout); // the server restarts: for a while nobody listens on its port
        // It listens again a second later (no blocking here: this runs on Reactor's timer thread).
        reactor.core.publisher.Mono<RdmaServer> back = reactor.core.publisher.Mono.delay(Duration.ofSeconds(1))
                .then(RdmaServer.bind(serverAddress)).cache();
        back.subscribe(server -> server.connections().subscribe(c -> c.receive()
                .concatMap(msg -> c.send(ByteBuffer.wrap(msg.toByteArray())).doFinally(x -> msg.release()))
                .subscribe()));

        // tag::reconnect[]
        ConnectionOptions options = ConnectionOptions.builder()
                .keepalive(Duration.ofSeconds(2))   // probe an idle peer: a dead host is noticed within ~11 s
                .build();
        RdmaConnection client = RdmaConnection.connect(serverAddress, options)
                // retries what may pass later (nobody listening, no route, timeouts), not a refusal
                .retryWhen(RdmaRetry.reconnect(20, Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)))
                .block(timeout);
        // end::reconnect[]
        client.send(ByteBuffer.wrap("back again".getBytes(StandardCharsets.UTF_8))).block(timeout);
        byte[] echo = client.receiveBytes().blockFirst(timeout);
        client.disposeNow(timeout);
        back.block(timeout).disposeNow(timeout);
        return new String(echo, StandardCharsets.UTF_8);
    }

    /**
     * docs/api.md: a server with a bounded accept queue and an asynchronous filter that checks a token.
     *
     * @param address an IP address of an RDMA interface
     * @return what a client with the token got back, and whether a client without it was refused
     */
    public static List<Object> guardedServer(InetAddress address) {
        Duration timeout = Duration.ofSeconds(30);
        byte[] token = "let-me-in".getBytes(StandardCharsets.US_ASCII);
        // tag::guarded-server[]
        // Stands for a call to another service: any Mono (an HTTP client's, a database driver's) will do.
        java.util.function.Function<byte[], Mono<Boolean>> tokenService =
                t -> Mono.delay(Duration.ofMillis(50)).map(x -> java.util.Arrays.equals(t, token));
        AcceptFilter filter = AcceptFilter.async((peer, data) -> tokenService.apply(data)
                .map(ok -> ok ? AcceptFilter.Decision.accept()
                        : AcceptFilter.Decision.reject("bad token".getBytes(StandardCharsets.US_ASCII))));
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0), ConnectionOptions.defaults(), filter,
                ServerOptions.builder().acceptQueue(16).build()) // beyond 16 waiting requests: rejected at once
                .block(timeout);
        server.connections()
                .flatMap(conn -> conn.receive()                  // echo on at most 64 connections at once;
                        .concatMap(msg -> conn.send(ByteBuffer.wrap(msg.toByteArray())).doFinally(x -> msg.release()))
                        .then(), 64)                             // more wait in the accept queue (demand)
                .subscribe();
        // end::guarded-server[]
        RdmaConnection client = RdmaConnection.connect(server.address(),
                ConnectionOptions.builder().privateData(token).build()).block(timeout);
        client.send(ByteBuffer.wrap("hello".getBytes(StandardCharsets.UTF_8))).block(timeout);
        String echo = new String(client.receiveBytes().blockFirst(timeout), StandardCharsets.UTF_8);
        client.disposeNow(timeout);
        Throwable refused = RdmaConnection.connect(server.address(),
                        ConnectionOptions.builder().privateData("guess".getBytes(StandardCharsets.US_ASCII)).build())
                .map(c -> (Throwable) new IllegalStateException("accepted without the token"))
                .onErrorResume(Mono::just).block(timeout);
        server.disposeNow(timeout);
        boolean rejected = refused instanceof RdmaCmException.Rejected r && !r.isAcceptQueueFull()
                && new String(r.privateData(), StandardCharsets.US_ASCII).startsWith("bad token");
        return List.of(echo, rejected);
    }

    /** docs/api.md's request id, kept in a ThreadLocal as an MDC entry would be. */
    static final ThreadLocal<String> REQUEST = new ThreadLocal<>();

    /**
     * docs/api.md: a ThreadLocal set before {@code send()} and {@code receive()} is there in the operators that run
     * on rdmaflux's threads. Leaves Reactor's automatic context propagation on.
     *
     * @param address an IP address of an RDMA interface
     * @return what the send's and the receive's operators saw: the value and the thread, twice
     * @throws InterruptedException if interrupted while waiting for the server's message
     */
    public static List<String> contextPropagation(InetAddress address) throws InterruptedException {
        Duration timeout = Duration.ofSeconds(10);
        List<String> seen = new CopyOnWriteArrayList<>();
        CountDownLatch received = new CountDownLatch(1);
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(address, 0)).block(timeout);
        server.connections().subscribe(c -> c.send(ByteBuffer.wrap(new byte[] {1})).subscribe());
        RdmaConnection connection = RdmaConnection.connect(server.address()).block(timeout);
        ByteBuffer message = ByteBuffer.wrap(new byte[] {2});
        try {
            // tag::context[]
            Hooks.enableAutomaticContextPropagation();          // once, at start-up
            ContextRegistry.getInstance().registerThreadLocalAccessor("request",
                    REQUEST::get, REQUEST::set, REQUEST::remove);

            REQUEST.set("42");
            connection.send(message)
                    .doOnSuccess(v -> seen.add(REQUEST.get() + " " + Thread.currentThread().getName()))
                    .block(timeout);                                    // "42 rdmaflux-signal-0"
            connection.receive()
                    .doOnNext(m -> seen.add(REQUEST.get() + " " + Thread.currentThread().getName())) // "42" too
                    .contextCapture()                           // for the operators before it
                    .subscribe(m -> {
                        m.release();
                        received.countDown();
                    });
            // end::context[]
            if (!received.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("the server's message did not arrive within " + timeout);
            }
            return seen;
        } finally {
            REQUEST.remove();
            ContextRegistry.getInstance().removeThreadLocalAccessor("request");
            connection.disposeNow(timeout);
            server.disposeNow(timeout);
        }
    }
}
