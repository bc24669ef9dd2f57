package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.zip.CRC32C;

import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import rdmaflux.testing.RdmaTestEnv;

/**
 * Test fixture: a server whose every received message is answered with its length and CRC32C (16 bytes),
 * after {@code hold} (a slow consumer keeps the message, and with it its memory, that long); and the
 * large self-checking payloads sent to it ({@link #payload}). {@link Payloads} covers messages up to 1 MiB
 * byte by byte; these go to 512 MiB and are checked by their checksum.
 */
final class ChecksumServer implements AutoCloseable {
    private static final Duration T = Duration.ofSeconds(120);
    private static final int MIB = 1 << 20;

    final RdmaServer server;
    private final Disposable handling;

    ChecksumServer(ConnectionOptions options, Duration hold) {
        server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options, AcceptFilter.ACCEPT_ALL)
                .block(T);
        handling = server.connections().subscribe(c -> c.receive()
                .concatMap(m -> Mono.delay(hold, Schedulers.parallel()).then(Mono.defer(() -> {
                    ByteBuffer reply = ByteBuffer.allocate(16).putLong(m.length()).putLong(crc(m.data()));
                    m.release();
                    return c.send(reply.flip());
                })), 1)
                .subscribe(null, e -> { }, c::dispose));
    }

    /** @return where it listens */
    InetSocketAddress address() {
        return server.address();
    }

    @Override
    public void close() {
        handling.dispose();
        server.disposeNow(T);
    }

    /** @return the CRC32C of {@code data}, as the server computes it */
    static long crc(MemorySegment data) {
        CRC32C crc = new CRC32C();
        crc.update(data.asByteBuffer());
        return crc.getValue();
    }

    /**
     * Message {@code seq} of {@code size} bytes in off-heap memory: every 8-byte word differs with its
     * position and with {@code seq}, so a misplaced or stale chunk changes the checksum.
     */
    static MemorySegment payload(Arena arena, int seq, long size) {
        return fill(arena.allocate(Math.max(size, 1), 8).asSlice(0, size), seq);
    }

    /**
     * Writes message {@code seq} of {@link #payload} into {@code m}, for a sender that reuses its memory.
     *
     * @return {@code m}
     */
    static MemorySegment fill(MemorySegment m, int seq) {
        long size = m.byteSize();
        long first = Math.min(size, MIB);
        long words = first / 8;
        long x = 0x9E3779B97F4A7C15L * (seq + 1);
        for (long i = 0; i < words; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            m.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, x);
        }
        for (long i = words * 8; i < first; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) (seq + i));
        }
        // Beyond the first MiB (filling 512 MiB word by word is slow under emulation): copies of it, each
        // marked with its index, so that a chunk out of place still changes the checksum.
        for (long at = MIB, chunk = 1; at < size; at += MIB, chunk++) {
            long n = Math.min(MIB, size - at);
            MemorySegment.copy(m, 0, m, at, n);
            if (n >= 8) {
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, at, chunk * 31 + seq);
            }
        }
        return m;
    }
}
