package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * 10,000 messages of 1 B .. 1 MiB through a real connection, every byte checked: once as a pipelined
 * echo stream, once as strict ping-pong.
 */
class MessagingIT {
    private static final Duration T = Duration.ofMinutes(3);
    private static final int COUNT = 10_000;
    /**
     * The size mix. In the sandbox every byte crosses rxe on an emulated CPU (which checksums each
     * 1 KiB packet) and every message costs a few thread hand-offs there too, so both the volume and
     * the count set the run time. Message {@code i} is {@code SIZES[i % 4]} (1 byte, an odd unaligned
     * 17, 256 and 4 KiB: below and above the 64-byte inline limit and the packet size), every
     * {@value #KIB64_EVERY}th is 64 KiB (multi-packet) and every {@value #MIB_EVERY}th is 1 MiB (a full
     * buffer): 40 × 1 MiB, 480 × 64 KiB, 2,000 × 4 KiB and 7,480 of 1/17/256 bytes, ~78 MiB per
     * direction. (A 64 KiB every 5th, 170 MiB, took 2-3 times as long.) Measured in the sandbox: echo
     * ~10 s, ping-pong ~20 s on an idle build machine, 2-4 times that while other VMs compete for its
     * two cores.
     */
    private static final int[] SIZES = {1, 17, 256, 4096};
    private static final int KIB64_EVERY = 20;
    private static final int MIB_EVERY = 250;

    private static final ConnectionOptions OPTIONS = ConnectionOptions.defaults().toBuilder()
            .bufferSize(Payloads.MIB).receiveBuffers(16).sendBuffers(16).build();

    static int size(int seq) {
        if (seq % MIB_EVERY == MIB_EVERY - 1) {
            return Payloads.MIB;
        }
        return seq % KIB64_EVERY == KIB64_EVERY - 1 ? 65536 : SIZES[seq % SIZES.length];
    }

    @Test
    void pipelinedEchoOfTenThousandMessages() {
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            Map<String, Long> before = HwCounters.read();
            RdmaConnection c = RdmaConnection.connect(echo.address(), OPTIONS).block(T);
            long start = System.nanoTime();
            AtomicInteger next = new AtomicInteger();
            AtomicLong bytes = new AtomicLong();
            Mono<Long> verified = c.receive().take(COUNT).doOnNext(m -> {
                try {
                    int seq = next.getAndIncrement();
                    Payloads.verify(m.data(), seq, size(seq));
                    bytes.addAndGet(m.length());
                } finally {
                    m.release();
                }
            }).count().cache();
            verified.subscribe();
            c.send(Flux.range(0, COUNT).map(i -> Payloads.message(i, size(i)))).block(T);
            assertEquals(COUNT, verified.block(T));
            assertEquals(COUNT, next.get());
            System.out.printf("echo: %d messages, %d MiB each way, %d ms%n", COUNT, bytes.get() >> 20,
                    (System.nanoTime() - start) / 1_000_000);
            c.disposeNow(T);
            // Both directions busy, credits returned on data and in control messages: still no RNR.
            Map<String, Long> delta = HwCounters.delta(before, HwCounters.read());
            System.out.println("echo: device counter deltas " + delta);
            delta.forEach((k, v) -> {
                if (k.contains("rnr")) {
                    assertEquals(0L, v, "RNR counter " + k + " moved: " + delta);
                }
            });
        }
    }

    @Test
    void strictPingPongOfTenThousandMessages() {
        try (EchoServer echo = new EchoServer(OPTIONS)) {
            RdmaConnection c = RdmaConnection.connect(echo.address(), OPTIONS).block(T);
            long start = System.nanoTime();
            AtomicInteger next = new AtomicInteger();
            // Each verified reply triggers the next request: exactly one message in flight.
            Mono<Long> done = c.receive().take(COUNT).concatMap(m -> {
                int seq = next.getAndIncrement();
                try {
                    Payloads.verify(m.data(), seq, size(seq));
                } finally {
                    m.release();
                }
                return seq + 1 < COUNT ? c.send(Payloads.message(seq + 1, size(seq + 1))).thenReturn(seq)
                        : Mono.just(seq);
            }).count().cache();
            done.subscribe();
            c.send(Payloads.message(0, size(0))).block(T);
            assertEquals(COUNT, done.block(T));
            assertEquals(COUNT, next.get());
            System.out.printf("ping-pong: %d round trips, %d ms%n", COUNT, (System.nanoTime() - start) / 1_000_000);
            c.disposeNow(T);
        }
    }
}
