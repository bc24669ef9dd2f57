package rdmaflux.cm;

import rdmaflux.cm.internal.lifecycle.Connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.QpAttributes;
import rdmaflux.verbs.RemoteBuffer;

/**
 * The transport options reach the QP: RDMA reads in flight up to the device's maximum by default (more than one
 * at once), explicit depths, ACK timeout and retry count as set, and a depth beyond the device's
 * limit refused with an error that names it.
 */
class TransportIT {
    private static final Duration T = Duration.ofSeconds(60);
    private static final int READS = 16;
    private static final int CHUNK = 16 * 1024;

    /** A server that advertises a region filled with a known pattern on every connection it accepts. */
    private static final class Target implements AutoCloseable {
        final Arena arena = Arena.ofShared();
        final MemorySegment region = arena.allocate((long) READS * CHUNK, 4096);
        final CompletableFuture<RdmaConnection> accepted = new CompletableFuture<>();
        final RdmaServer server;

        Target(ConnectionOptions options) {
            MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(5, READS * CHUNK)), 0, region, 0,
                    region.byteSize());
            server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                    AcceptFilter.ACCEPT_ALL).block(T);
            server.connections().subscribe(c -> {
                accepted.complete(c);
                RegisteredBuffer r = c.register(region, AccessFlags.REMOTE_ALL);
                ByteBuffer advert = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
                r.remote().writeTo(advert);
                c.send(advert.flip()).subscribe(null, e -> { });
            });
        }

        RdmaConnection serverSide() throws Exception {
            return accepted.get(T.toSeconds(), TimeUnit.SECONDS);
        }

        @Override
        public void close() {
            server.disposeNow(T);
            arena.close();
        }
    }

    @Test
    void byDefaultManyReadsAreInFlightAtOnceAndAllLandCorrectly() throws Exception {
        try (Target target = new Target(ConnectionOptions.defaults()); Arena local = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(target.server.address()).block(T);
            RemoteBuffer remote = RemoteBuffer.readFrom(ByteBuffer.wrap(c.receiveBytes().blockFirst(T)));
            // By default both sides ask for the device's maximum (128 on rxe), so more than one read can be in flight.
            assertTrue(c.initiatorDepth() > 1, "client initiator depth " + c.initiatorDepth());
            assertTrue(target.serverSide().responderResources() > 1,
                    "server responder resources " + target.serverSide().responderResources());

            RegisteredBuffer buf = c.register(local.allocate((long) READS * CHUNK, 4096), AccessFlags.LOCAL_WRITE);
            // Every read is posted before the first completes; the QP lets them all go on the wire.
            Flux.range(0, READS)
                    .flatMap(i -> c.read(buf.slice((long) i * CHUNK, CHUNK), remote.slice((long) i * CHUNK, CHUNK)),
                            READS)
                    .then().block(T);
            Payloads.verify(buf.segment(), 5, READS * CHUNK);
            c.disposeNow(T);
        }
    }

    @Test
    void explicitDepthsAckTimeoutAndRetryCountReachTheQueuePair() throws Exception {
        try (Target target = new Target(ConnectionOptions.defaults())) {
            ConnectionOptions options = ConnectionOptions.defaults().toBuilder()
                    .initiatorDepth(4).responderResources(2).ackTimeout(14).retryCount(3).typeOfService(32).build();
            RdmaConnection c = RdmaConnection.connect(target.server.address(), options).block(T);
            c.receiveBytes().blockFirst(T);
            assertEquals(4, c.initiatorDepth());
            assertEquals(2, c.responderResources());
            // The server asked for the device maximum and got what the client offers.
            RdmaConnection s = target.serverSide();
            assertEquals(4, s.responderResources());
            assertEquals(2, s.initiatorDepth());
            QpAttributes qp = ((Connection) c).queuePairAttributes();
            assertEquals(14, qp.timeout());
            assertEquals(3, qp.retryCount());
            c.disposeNow(T);
        }
    }

    @Test
    void aDepthBeyondTheDeviceLimitFailsTheConnectNamingTheLimit() {
        try (Target target = new Target(ConnectionOptions.defaults())) {
            ConnectionOptions tooDeep = ConnectionOptions.defaults().toBuilder().initiatorDepth(254).build();
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> RdmaConnection.connect(target.server.address(), tooDeep).block(T));
            Throwable cause = e instanceof IllegalArgumentException ? e : e.getCause();
            IllegalArgumentException limit = assertInstanceOf(IllegalArgumentException.class, cause, e.toString());
            assertTrue(limit.getMessage().contains("initiatorDepth is 254"), limit.getMessage());
            assertTrue(limit.getMessage().contains("max_qp_init_rd_atom"), limit.getMessage());
        }
    }
}
