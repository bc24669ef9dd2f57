package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import reactor.core.Disposable;

/** Temporary probe (not committed): does a released message throw once its buffer holds a newer message? */
class StaleMessageProbeIT {
    private static final Duration T = Duration.ofMinutes(1);
    private static final ConnectionOptions OPTIONS = ConnectionOptions.defaults().toBuilder()
            .bufferSize(4096).receiveBuffers(1).sendBuffers(1).build();

    @Test
    void probe() throws InterruptedException {
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), OPTIONS).block(T);
            BlockingQueue<RdmaMessage> in = new LinkedBlockingQueue<>();
            Disposable receiving = c.receive().subscribe(in::add);
            try {
                RdmaMessage first = null;
                for (int i = 0; i < 40; i++) {
                    c.send(ByteBuffer.wrap(("m" + i).getBytes(StandardCharsets.US_ASCII))).block(T);
                    RdmaMessage r = in.poll(T.toSeconds(), TimeUnit.SECONDS);
                    assertNotNull(r);
                    if (first == null) {
                        first = r;
                    } else if (r == first) {
                        String stale;
                        try {
                            stale = new String(first.toByteArray(), StandardCharsets.US_ASCII);
                        } catch (IllegalStateException e) {
                            stale = "threw " + e.getMessage();
                        }
                        System.out.println("PROBE message " + i + " reuses the first message's object; the released "
                                + "first message now reads: " + stale);
                    }
                    r.release();
                }
            } finally {
                receiving.dispose();
                c.disposeNow(T);
            }
        }
    }
}
