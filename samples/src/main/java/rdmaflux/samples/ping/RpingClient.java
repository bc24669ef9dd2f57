package rdmaflux.samples.ping;

import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.util.function.Consumer;

import reactor.core.publisher.Mono;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;

/**
 * The client side of rping (see {@link Rping} for the protocol): advertises a source buffer holding
 * the ping, waits for "go", advertises a cleared sink buffer, waits for "go", compares sink and source.
 *
 * <p>The loop is driven by the server's messages: each "go" triggers the next step, so the sequence is
 * a {@code concatMap} over {@link RdmaConnection#receive()} with two phases. Everything runs on the
 * connection's scheduler; nothing blocks.
 */
public final class RpingClient {
    private final RdmaConnection connection;
    private final RpingSettings settings;
    private final Consumer<String> out;
    private final RegisteredBuffer source;
    private final RegisteredBuffer sink;
    private boolean awaitingWriteGo;
    private int pings;
    private int verified;

    private RpingClient(RdmaConnection connection, RpingSettings settings, Consumer<String> out) {
        this.connection = connection;
        this.settings = settings;
        this.out = out;
        // Arena.ofAuto: the registrations keep the memory reachable until the connection frees them.
        Arena arena = Arena.ofAuto();
        source = connection.register(arena.allocate(settings.size(), 64),
                AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
        sink = connection.register(arena.allocate(settings.size(), 64),
                AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE));
    }

    /**
     * Connects to an rping server, runs {@link RpingSettings#count()} pings (forever with 0) and
     * disconnects, which is what ends the server's loop.
     *
     * @param server the server's RDMA address and port
     * @param settings size, count, printing, validation
     * @param out receives rping's output lines ({@code "ping data: ..."} with {@code -v})
     * @return the result after the disconnect; fails with {@link RpingException} on a data mismatch, a
     *         malformed message or a server that left early, or with the connection's failure
     */
    public static Mono<RpingResult> run(InetSocketAddress server, RpingSettings settings, Consumer<String> out) {
        return Mono.usingWhen(RdmaConnection.connect(server, Rping.connectionOptions()),
                c -> Mono.defer(() -> new RpingClient(c, settings, out).pings()),
                c -> {
                    c.dispose();
                    return c.onDispose();
                });
    }

    private Mono<RpingResult> pings() {
        return advertiseSource()
                .thenMany(connection.receive())
                .concatMap(this::onGo)
                .takeUntil(done -> done)
                .then(Mono.fromCallable(this::result));
    }

    private Mono<Void> advertiseSource() {
        PingData.fill(source.segment(), pings);
        awaitingWriteGo = false;
        return connection.send(RpingInfo.of(source.remote()).encode());
    }

    /** One "go" from the server; emits whether the last ping is done. */
    private Mono<Boolean> onGo(RdmaMessage message) {
        try {
            RpingInfo.decode(message.asByteBuffer());
        } finally {
            message.release();
        }
        if (!awaitingWriteGo) {
            // The server has read the source; clear the sink so a missing write cannot pass validation.
            sink.segment().fill((byte) 0);
            awaitingWriteGo = true;
            return connection.send(RpingInfo.of(sink.remote()).encode()).thenReturn(false);
        }
        if (settings.validate()) {
            long at = source.segment().mismatch(sink.segment());
            if (at >= 0) {
                throw new RpingException("data mismatch in ping " + pings + " at byte " + at + ": sent \""
                        + PingData.text(source.segment()) + "\", got back \"" + PingData.text(sink.segment()) + "\"");
            }
            verified++;
        }
        if (settings.verbose()) {
            out.accept("ping data: " + PingData.text(sink.segment()));
        }
        pings++;
        if (settings.count() > 0 && pings == settings.count()) {
            return Mono.just(true);
        }
        return advertiseSource().thenReturn(false);
    }

    private RpingResult result() {
        if (settings.count() > 0 && pings < settings.count()) {
            throw new RpingException("the server disconnected after " + pings + " of " + settings.count() + " pings");
        }
        return new RpingResult(pings, verified);
    }
}
