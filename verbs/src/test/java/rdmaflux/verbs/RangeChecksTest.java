package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

/**
 * Offset-plus-length checks at the edges of {@code long} and {@code int}: a naive {@code offset + length > size}
 * wraps to a negative sum and lets a range far outside the memory through.
 */
class RangeChecksTest {
    private static final long[] HOSTILE = {-1, Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE - 1,
        Integer.MAX_VALUE, Integer.MIN_VALUE, 4097, 1L << 32};

    @Test
    void memoryRegionRangesThatOverflowAreOutside() {
        MemoryRegion mr = new FakeProvider(1, 1).mr; // 4096 bytes
        for (long offset : HOSTILE) {
            for (long length : HOSTILE) {
                assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(offset, length),
                        offset + " + " + length);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(offset, 1), offset + " + 1");
            assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(1, offset), "1 + " + offset);
        }
        // Long.MAX_VALUE + 2 wraps to Long.MIN_VALUE + 1, which the old check took for "inside".
        assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(Long.MAX_VALUE, 2));
        assertDoesNotThrow(() -> mr.checkRange(0, 4096));
        assertDoesNotThrow(() -> mr.checkRange(4096, 0));
        assertDoesNotThrow(() -> mr.checkRange(4095, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(4096, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(0, 4097));
    }

    @Test
    void scatterGatherEntriesFromARegionAreCheckedBeforeAnythingIsWritten() {
        FakeProvider fake = new FakeProvider(1, 1);
        SendRequests s = new SendRequests(1, 1);
        s.set(0, 1, SendOpcode.SEND, 0);
        assertThrows(IndexOutOfBoundsException.class, () -> s.sge(0, 0, fake.mr, Long.MAX_VALUE, Integer.MAX_VALUE));
        assertThrows(IndexOutOfBoundsException.class, () -> s.sge(0, 0, fake.mr, Long.MIN_VALUE, 8));
        assertThrows(IndexOutOfBoundsException.class, () -> s.sge(0, 0, fake.mr, 8, Integer.MIN_VALUE));
        assertThrows(IllegalArgumentException.class, () -> s.sge(0, 0, 0x1000L, -1, 0x1234));
        assertEquals(0, s.sgeCount(0), "no rejected entry counts");
    }

    @Test
    void remoteBufferSlicesThatOverflowAreOutside() {
        RemoteBuffer b = new RemoteBuffer(0x7f00_0000_0000L, 4096, 0x5678);
        for (long offset : HOSTILE) {
            for (long length : HOSTILE) {
                assertThrows(IndexOutOfBoundsException.class, () -> b.slice(offset, length), offset + " + " + length);
            }
        }
        assertThrows(IndexOutOfBoundsException.class, () -> b.slice(Long.MAX_VALUE, 2));
        assertThrows(IndexOutOfBoundsException.class, () -> b.slice(2, Long.MAX_VALUE));
        RemoteBuffer huge = new RemoteBuffer(0, Long.MAX_VALUE, 1);
        assertEquals(new RemoteBuffer(Long.MAX_VALUE - 1, 1, 1), huge.slice(Long.MAX_VALUE - 1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> huge.slice(Long.MAX_VALUE, 1));
        assertEquals(new RemoteBuffer(0x7f00_0000_0000L + 4000, 96, 0x5678), b.slice(4000, 96));
        assertEquals(new RemoteBuffer(0x7f00_0000_0000L + 4096, 0, 0x5678), b.slice(4096, 0));
    }

    @Test
    void aNegativeRemoteLengthIsRefusedEvenFromTheWire() {
        assertThrows(IllegalArgumentException.class, () -> new RemoteBuffer(0, -1, 1));
        ByteBuffer wire = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
        wire.putLong(0x1000).putLong(Long.MIN_VALUE).putInt(7).flip();
        assertThrows(IllegalArgumentException.class, () -> RemoteBuffer.readFrom(wire));
        ByteBuffer ok = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
        new RemoteBuffer(0x1000, 64, 7).writeTo(ok);
        assertEquals(new RemoteBuffer(0x1000, 64, 7), RemoteBuffer.readFrom(ok.flip()));
    }
}
