package rdmaflux.verbs;

import java.nio.ByteOrder;

/**
 * Fields of a small C struct held as a {@code long[]} copy of its bytes (in native byte order).
 *
 * <p>Why: reading or writing a struct field through the FFM API is a var handle access with its bounds
 * and alignment checks, about a dozen calls deep before the JIT has compiled it. The connection manager
 * reads and writes small structs (an event, connection parameters) a few times per connection, mostly
 * still interpreted; copying the struct in or out with one bulk copy and picking fields out of longs
 * with shifts does the same work at a fraction of the cost.
 */
final class NativeImage {
    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private NativeImage() {
    }

    /**
     * Reads an unsigned field.
     *
     * @param image the struct's bytes as longs
     * @param offset the field's byte offset; the field must not straddle two longs (C alignment ensures it)
     * @param size 1, 2, 4 or 8 bytes
     * @return the field's value, zero-extended (a pointer or 64-bit field as it is)
     */
    static long get(long[] image, long offset, int size) {
        long word = image[(int) (offset >>> 3)];
        if (size == 8) {
            return word;
        }
        int shift = shift(offset, size);
        return (word >>> shift) & ((1L << (size * 8)) - 1);
    }

    /**
     * Writes a field (its low {@code size} bytes of {@code value}).
     *
     * @param image the struct's bytes as longs
     * @param offset the field's byte offset; the field must not straddle two longs
     * @param size 1, 2, 4 or 8 bytes
     * @param value the value
     */
    static void put(long[] image, long offset, int size, long value) {
        int i = (int) (offset >>> 3);
        if (size == 8) {
            image[i] = value;
            return;
        }
        int shift = shift(offset, size);
        long mask = ((1L << (size * 8)) - 1) << shift;
        image[i] = (image[i] & ~mask) | ((value << shift) & mask);
    }

    private static int shift(long offset, int size) {
        int inWord = (int) (offset & 7);
        if ((inWord + size) > 8) {
            throw new IllegalArgumentException("a field at " + offset + " of " + size + " bytes straddles two longs");
        }
        return (LITTLE ? inWord : 8 - size - inWord) * 8;
    }
}
