package rdmaflux.samples.ping;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/**
 * The bytes of a ping, exactly as rping's client writes them, so either side can check the other.
 *
 * <p>Ping {@code n} of size {@code S} is the ASCII text {@code "rdma-ping-<n>: "}, then letters from
 * {@code 'A'} (65) to {@code 'z'} (122) counting up and wrapping back to {@code 'A'}, starting at
 * {@code 'A' + n mod 58}, and a NUL in the last byte: a C string of {@code S - 1} characters.
 */
public final class PingData {
    /** rping's smallest size: room for the prefix with the largest int and its NUL (11 + 15 bytes). */
    public static final int MIN_SIZE = 26;
    /** rping's largest size: {@code RPING_BUFSIZE - 1}. */
    public static final int MAX_SIZE = 64 * 1024 - 1;
    private static final int FIRST = 'A';
    private static final int LAST = 'z';
    private static final int SPAN = LAST - FIRST + 1;

    private PingData() {
    }

    /**
     * Fills a buffer as rping does.
     *
     * @param ping the iteration, from 0
     * @param size the buffer size
     * @return the bytes rping's client puts in its source buffer for that iteration
     */
    public static byte[] expected(int ping, int size) {
        if (size < MIN_SIZE || ping < 0) {
            throw new IllegalArgumentException("ping " + ping + ", size " + size);
        }
        byte[] out = new byte[size];
        byte[] prefix = ("rdma-ping-" + ping + ": ").getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        int letter = ping % SPAN;
        for (int i = prefix.length; i < size - 1; i++) {
            out[i] = (byte) (FIRST + letter);
            letter = (letter + 1) % SPAN;
        }
        out[size - 1] = 0;
        return out;
    }

    /**
     * Writes ping {@code ping} over the whole segment.
     *
     * @param buffer the source buffer
     * @param ping the iteration
     */
    public static void fill(MemorySegment buffer, int ping) {
        MemorySegment.copy(MemorySegment.ofArray(expected(ping, Math.toIntExact(buffer.byteSize()))), 0, buffer, 0,
                buffer.byteSize());
    }

    /**
     * Reads a ping buffer as text.
     *
     * @param buffer a ping buffer
     * @return its C string: the bytes before the first NUL (all of them if none)
     */
    public static String text(MemorySegment buffer) {
        int len = cStringLength(buffer);
        return new String(buffer.asSlice(0, len).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII);
    }

    /**
     * Measures the C string in a ping buffer.
     *
     * @param buffer a ping buffer
     * @return {@code strlen}, bounded by the segment
     */
    public static int cStringLength(MemorySegment buffer) {
        long n = buffer.byteSize();
        for (long i = 0; i < n; i++) {
            if (buffer.get(ValueLayout.JAVA_BYTE, i) == 0) {
                return (int) i;
            }
        }
        return (int) n;
    }
}
