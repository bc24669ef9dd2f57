package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import rdmaflux.testing.RdmaTestEnv;

/** {@link RdmaRetry#reconnect}: a client outlives its server's restart, and a refusal is not retried. */
class ReconnectIT {
    private static final Duration T = Duration.ofSeconds(60);

    @Test
    void aClientReconnectsOnceItsServerListensAgain() throws Exception {
        InetSocketAddress address;
        try (EchoServer before = new EchoServer(ConnectionOptions.defaults())) {
            address = before.address();
        }
        Map<String, Integer> baseline = Resources.baseline();
        AtomicInteger attempts = new AtomicInteger();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        CompletableFuture<RdmaConnection> connected = Mono.defer(() -> {
                    attempts.incrementAndGet();
                    return RdmaConnection.connect(address).doOnError(failures::add);
                })
                .retryWhen(RdmaRetry.reconnect(50, Duration.ofMillis(100)).maxBackoff(Duration.ofMillis(400)))
                .toFuture();
        // The server is down for a while: the attempts meanwhile fail and are retried.
        Resources.sleep(2000);
        assertFalse(connected.isDone(), "connected to nobody? " + connected);
        try (EchoServer after = new EchoServer(address, ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL)) {
            RdmaConnection c = connected.get(T.toSeconds(), TimeUnit.SECONDS);
            System.out.println("reconnected after " + attempts.get() + " attempts; the failed ones: "
                    + failures.stream().map(Throwable::toString).distinct().toList());
            assertTrue(attempts.get() > 1, "the first attempts failed while the server was down");
            assertTrue(failures.stream().allMatch(RdmaRetry::isRetryable), failures.toString());
            byte[] hello = "after the restart".getBytes(StandardCharsets.US_ASCII);
            c.send(java.nio.ByteBuffer.wrap(hello)).block(T);
            assertEquals("after the restart", new String(c.receiveBytes().blockFirst(T), StandardCharsets.US_ASCII));
            c.disposeNow(T);
        }
        // Every failed attempt freed what it made.
        Resources.awaitBaseline(baseline, T, "after reconnecting through failed attempts");
    }

    @Test
    void aServerThatSaysNoIsNotAskedAgain() {
        AcceptFilter no = (peer, data) -> AcceptFilter.Decision.reject("go away".getBytes(StandardCharsets.US_ASCII));
        try (EchoServer server = new EchoServer(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.defaults(), no)) {
            AtomicInteger attempts = new AtomicInteger();
            Throwable e = assertThrows(Throwable.class, () -> Mono.defer(() -> {
                        attempts.incrementAndGet();
                        return RdmaConnection.connect(server.address());
                    })
                    .retryWhen(RdmaRetry.reconnect(5, Duration.ofMillis(10)))
                    .block(T));
            RdmaCmException.Rejected rejected = assertInstanceOf(RdmaCmException.Rejected.class, e, e.toString());
            assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, rejected.reason());
            assertEquals(1, attempts.get(), "a refusal is a decision, not a transient failure");
        }
    }
}
