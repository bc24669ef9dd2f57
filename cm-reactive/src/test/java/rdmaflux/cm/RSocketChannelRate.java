package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.frame.decoder.PayloadDecoder;
import io.rsocket.util.ByteBufPayload;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import rdmaflux.testing.RdmaTestEnv;

/**
 * A measurement, not a check (not in the sandbox run; its name does not end in IT): rsocket-java's kit's
 * channel echo ({@code requestChannel20_000} and, with {@code limitRate(8)}, the shape of
 * {@code requestChannel200_000}) without what the kit adds at random or on purpose (assembly tracing, its
 * {@code AsyncDuplexConnection} wrappers picked per test, a keepalive every 10 ms, a polling verifier), so
 * runs of two builds compare. Prints payload frames per second and the JVM's CPU time per payload frame
 * (every thread; both sides run in this JVM). Run it with
 * {@code RDMAFLUX_IT_INCLUDE='.*\.RSocketChannelRate$' scripts/it}; docs/rsocket.md quotes it.
 */
class RSocketChannelRate {
    private static final Duration T = Duration.ofMinutes(10);
    private static final int N = 10_000;
    private static final int ROUNDS = 3;

    @Test
    void channelEcho() {
        measure("unbounded", 0);
    }

    @Test
    void channelEchoLimitRate8() {
        measure("limitRate(8)", 8, ConnectionOptions.defaults());
    }

    /** Frames handled on the completion loops, as rsocket-transport-netty handles them on its event loops. */
    @Test
    void channelEchoLimitRate8OnTheLoops() {
        measure("limitRate(8), on the loops", 8,
                ConnectionOptions.defaults().toBuilder().scheduler(reactor.core.scheduler.Schedulers.immediate()).build());
    }

    /** The same, unbounded. */
    @Test
    void channelEchoOnTheLoops() {
        measure("unbounded, on the loops", 0,
                ConnectionOptions.defaults().toBuilder().scheduler(reactor.core.scheduler.Schedulers.immediate()).build());
    }

    private static void measure(String name, int limitRate) {
        measure(name, limitRate, ConnectionOptions.defaults());
    }

    private static void measure(String name, int limitRate, ConnectionOptions options) {
        RSocket echo = new RSocket() {
            @Override
            public Flux<Payload> requestChannel(org.reactivestreams.Publisher<Payload> payloads) {
                return Flux.from(payloads);
            }
        };
        RdmaCloseableServer server = RSocketServer.create(SocketAcceptor.with(echo))
                .payloadDecoder(PayloadDecoder.ZERO_COPY)
                .bind(RdmaServerTransport.create(new InetSocketAddress(RdmaTestEnv.address(), 0), options,
                        AcceptFilter.ACCEPT_ALL)).block(T);
        RSocket client = RSocketConnector.create().payloadDecoder(PayloadDecoder.ZERO_COPY)
                .connect(RdmaClientTransport.create(server.address(), options)).block(T);
        try {
            channel(client, N / 5, limitRate); // warm-up
            for (int r = 0; r < ROUNDS; r++) {
                long cpu0 = cpuNanos();
                long t0 = System.nanoTime();
                channel(client, N, limitRate);
                double s = (System.nanoTime() - t0) / 1e9;
                double cpu = (cpuNanos() - cpu0) / 1e9;
                System.out.printf(Locale.ROOT, "[rate] channel echo %s: %d payloads each way in %.2f s = %.0f payload"
                        + " frames/s, JVM CPU %.1f s = %.0f us per payload frame, loadavg %s%n", name, N, s, 2 * N / s,
                        cpu, cpu * 1e6 / (2 * N), load());
            }
        } finally {
            client.dispose();
            server.dispose();
            server.onClose().block(T);
        }
    }

    private static void channel(RSocket client, int n, int limitRate) {
        Flux<Payload> echoed = client.requestChannel(Flux.range(0, n).map(i -> ByteBufPayload.create("payload " + i)));
        if (limitRate > 0) {
            echoed = echoed.limitRate(limitRate);
        }
        Long count = echoed.doOnNext(Payload::release).count().block(T);
        assertEquals(n, count);
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static String load() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "?";
        }
    }
}
