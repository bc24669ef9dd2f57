package rdmaflux.cm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Test fixture: self-checking message payloads.
 *
 * <p>Message {@code seq} of {@code n} bytes is the slice of a fixed pattern (period 251, a prime, so
 * it never lines up with power-of-two sizes) starting at {@code seq % 251}; from 4 bytes on, its first
 * 4 bytes are replaced by {@code seq} (big-endian). A receiver that knows which {@code seq} it expects
 * therefore checks every byte: a lost, duplicated, reordered, truncated or corrupted message fails.
 * The comparison is one vectorized {@link MemorySegment#mismatch}, cheap even for 1 MiB under emulation.
 */
final class Payloads {
    static final int MIB = 1 << 20;
    private static final int PERIOD = 251;
    private static final MemorySegment PATTERN;

    static {
        byte[] p = new byte[MIB + PERIOD];
        for (int i = 0; i < p.length; i++) {
            p[i] = (byte) ((i % PERIOD) * 73 + 11);
        }
        PATTERN = MemorySegment.ofArray(p);
    }

    private Payloads() {
    }

    /** @return message {@code seq} of {@code size} bytes, in a fresh buffer (send copies it later) */
    static ByteBuffer message(int seq, int size) {
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.BIG_ENDIAN);
        MemorySegment.copy(PATTERN, offset(seq), MemorySegment.ofBuffer(b), 0, size);
        if (size >= 4) {
            b.putInt(0, seq);
        }
        return b;
    }

    /**
     * Checks every byte of a received payload.
     *
     * @throws AssertionError naming the first difference
     */
    static void verify(MemorySegment data, int seq, int size) {
        if (data.byteSize() != size) {
            throw new AssertionError("message " + seq + ": expected " + size + " bytes, got " + data.byteSize());
        }
        int from = 0;
        if (size >= 4) {
            int got = data.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 0);
            if (got != seq) {
                throw new AssertionError("expected message " + seq + ", got " + got + " (" + size + " bytes)");
            }
            from = 4;
        }
        long at = MemorySegment.mismatch(data, from, size, PATTERN, offset(seq) + from, offset(seq) + size);
        if (at >= 0) {
            throw new AssertionError("message " + seq + " (" + size + " bytes) differs at byte " + (from + at));
        }
    }

    static void verify(byte[] data, int seq, int size) {
        verify(MemorySegment.ofArray(data), seq, size);
    }

    private static long offset(int seq) {
        return Math.floorMod(seq, PERIOD);
    }
}
