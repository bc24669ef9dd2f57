package rdmaflux.samples.ping;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.function.Consumer;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.verbs.AccessFlags;

/**
 * The server side of rping (see {@link Rping} for the protocol): for each advertised source it
 * RDMA-reads the ping and says "go"; for each advertised sink it RDMA-writes the ping back and says
 * "go". A connection ends when the client disconnects.
 *
 * <p>Unlike rping's server, with {@code -V} this one also checks every ping it reads against the
 * bytes rping's client writes ({@link PingData}), so both directions are verified.
 */
public final class RpingServer implements AutoCloseable {
    private final RdmaServer server;
    private final RpingSettings settings;
    private final Consumer<String> out;

    private RpingServer(RdmaServer server, RpingSettings settings, Consumer<String> out) {
        this.server = server;
        this.settings = settings;
        this.out = out;
    }

    /**
     * Listens.
     *
     * @param address the RDMA interface's address (or the wildcard) and port (0 picks one)
     * @param settings {@link RpingSettings#size()} is the largest ping accepted; verbose, validate
     * @param out receives the output lines ({@code "server ping data: ..."} with {@code -v})
     * @return the listening server
     */
    public static Mono<RpingServer> bind(InetSocketAddress address, RpingSettings settings, Consumer<String> out) {
        return RdmaServer.bind(address, Rping.connectionOptions(), AcceptFilter.ACCEPT_ALL)
                .map(s -> new RpingServer(s, settings, out));
    }

    /** {@return the bound address, with the port the system picked} */
    public InetSocketAddress address() {
        return server.address();
    }

    /**
     * Serves the first client to connect, like rping without {@code -P}. Call once: the server's
     * connections have one subscriber.
     *
     * @return that connection's result when the client disconnected
     */
    public Mono<RpingResult> serveOne() {
        return server.connections().next().flatMap(this::serve);
    }

    /**
     * Serves every client, concurrently, like rping's persistent mode ({@code -P}). Call once, and not
     * together with {@link #serveOne()}. A connection that fails is reported to {@code failures} and
     * does not stop the others or the server.
     *
     * @param failures receives each failed connection's error
     * @return each completed connection's result; completes when the server is closed
     */
    public Flux<RpingResult> serveAll(Consumer<Throwable> failures) {
        return server.connections().flatMap(c -> serve(c).onErrorResume(e -> {
            failures.accept(e);
            return Mono.empty();
        }));
    }

    /**
     * Runs the rping loop on an established connection until the client disconnects, then frees it.
     *
     * @param connection a connection accepted with {@link Rping#connectionOptions()}
     * @return the result
     */
    public Mono<RpingResult> serve(RdmaConnection connection) {
        return Mono.usingWhen(Mono.just(connection),
                c -> Mono.defer(() -> new Session(c).run()),
                c -> {
                    c.dispose();
                    return c.onDispose();
                });
    }

    /** Stops listening; connections being served continue until their clients leave. */
    @Override
    public void close() {
        server.disposeNow(Duration.ofSeconds(10));
    }

    /** One connection's loop: alternates between expecting a source and a sink advertisement. */
    private final class Session {
        private final RdmaConnection connection;
        private final RegisteredBuffer buffer;
        private boolean awaitingSink;
        private int readLength;
        private int pings;
        private int verified;

        Session(RdmaConnection connection) {
            this.connection = connection;
            // Local only: the server is never the target of the peer's one-sided operations.
            buffer = connection.register(Arena.ofAuto().allocate(settings.size(), 64), AccessFlags.LOCAL_WRITE);
        }

        Mono<RpingResult> run() {
            return connection.receive()
                    .concatMap(this::onInfo)
                    .then(Mono.fromSupplier(() -> new RpingResult(pings, verified)));
        }

        private Mono<Void> onInfo(RdmaMessage message) {
            RpingInfo info;
            try {
                info = RpingInfo.decode(message.asByteBuffer());
            } finally {
                message.release();
            }
            long size = Integer.toUnsignedLong(info.size());
            return awaitingSink ? echo(info, size) : fetch(info, size);
        }

        /** Source advertised: read the ping, check it, tell the client to go on. */
        private Mono<Void> fetch(RpingInfo info, long size) {
            if (size > buffer.length() || size == 0) {
                return Mono.error(new RpingException("the client advertised a " + size + "-byte buffer; this server "
                        + "takes 1 to " + buffer.length() + " bytes (use the same -S on both sides)"));
            }
            readLength = (int) size;
            RegisteredBuffer landing = buffer.slice(0, readLength);
            return connection.read(landing, info.remote())
                    .then(Mono.fromRunnable(() -> {
                        if (settings.validate()) {
                            check(landing);
                        }
                        if (settings.verbose()) {
                            out.accept("server ping data: " + PingData.text(landing.segment()));
                        }
                        awaitingSink = true;
                    }))
                    .then(connection.send(RpingInfo.GO.encode()));
        }

        /** Sink advertised: write the ping's C string (with its NUL) back, tell the client to go on. */
        private Mono<Void> echo(RpingInfo info, long size) {
            long len = Math.min(Math.min(PingData.cStringLength(buffer.segment().asSlice(0, readLength)) + 1L,
                    readLength), size);
            return connection.write(buffer.slice(0, len), info.remote().slice(0, len))
                    .then(connection.send(RpingInfo.GO.encode()))
                    .then(Mono.fromRunnable(() -> {
                        awaitingSink = false;
                        pings++;
                    }));
        }

        private void check(RegisteredBuffer landing) {
            if (readLength < PingData.MIN_SIZE) {
                throw new RpingException("ping " + pings + " has " + readLength + " bytes, fewer than rping's minimum "
                        + PingData.MIN_SIZE);
            }
            long at = landing.segment().mismatch(MemorySegment.ofArray(PingData.expected(pings, readLength)));
            if (at >= 0) {
                throw new RpingException("ping " + pings + " differs from rping's pattern at byte " + at + ": got \""
                        + PingData.text(landing.segment()) + "\"");
            }
            verified++;
        }
    }
}
