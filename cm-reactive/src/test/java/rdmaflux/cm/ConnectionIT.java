package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/** Connect, exchange messages, close: the basic reactive flow on the real device. */
class ConnectionIT {
    private static final Duration T = Duration.ofSeconds(60);

    @Test
    void echoRoundTripsAndOrderlyClose() {
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            RdmaConnection c = RdmaConnection.connect(echo.address()).block(T);
            StepVerifier.create(c.states().take(1)).expectNext(ConnectionState.ESTABLISHED).expectComplete()
                    .verify(T);
            int n = 200;
            Flux<byte[]> replies = c.receiveBytes().take(n).cache();
            replies.subscribe();
            c.send(Flux.range(0, n).map(i -> ByteBuffer.wrap(("message " + i).getBytes()))).block(T);
            List<byte[]> got = replies.collectList().block(T);
            assertEquals(n, got.size());
            for (int i = 0; i < n; i++) {
                assertArrayEquals(("message " + i).getBytes(), got.get(i));
            }
            c.disposeNow(T);
            StepVerifier.create(c.states().last()).expectNext(new ConnectionState.Closed(false)).expectComplete()
                    .verify(T);
            StepVerifier.create(c.send(ByteBuffer.allocate(1))).expectError(IllegalStateException.class).verify(T);
        }
    }
}
