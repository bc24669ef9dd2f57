package rdmaflux.samples.ping;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** The ping bytes against what rping 44 printed in the sandbox ({@code rping -c -v}, default size 64). */
class PingDataTest {

    private static byte[] cString(String text) {
        byte[] b = new byte[text.length() + 1];
        System.arraycopy(text.getBytes(StandardCharsets.US_ASCII), 0, b, 0, text.length());
        return b;
    }

    @Test
    void matchesRpingsOwnOutput() {
        assertArrayEquals(cString("rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr"),
                PingData.expected(0, 64));
        assertArrayEquals(cString("rdma-ping-4: EFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuv"),
                PingData.expected(4, 64));
    }

    @Test
    void lettersWrapFromLowercaseZToUppercaseA() {
        // Ping 57 starts at 'A' + 57 = 'z'; ping 58 starts over at 'A'.
        assertArrayEquals(cString("rdma-ping-57: zABCDEFGHIJ"), PingData.expected(57, 26));
        assertArrayEquals(cString("rdma-ping-58: ABCDEFGHIJK"), PingData.expected(58, 26));
        byte[] p3 = PingData.expected(3, 200);
        assertEquals('z', p3[13 + ('z' - 'D')]);
        assertEquals('A', p3[13 + ('z' - 'D') + 1]);
    }

    @Test
    void smallestSizeHoldsTheLargestPingNumber() {
        // 2147483647 mod 58 = 7: the letters start at 'H'.
        assertArrayEquals(cString("rdma-ping-2147483647: HIJ"), PingData.expected(Integer.MAX_VALUE, 26));
        assertThrows(IllegalArgumentException.class, () -> PingData.expected(0, PingData.MIN_SIZE - 1));
    }

    @Test
    void fillAndTextRoundTrip() {
        MemorySegment buf = Arena.ofAuto().allocate(100);
        PingData.fill(buf, 7);
        assertEquals(99, PingData.cStringLength(buf));
        assertEquals(new String(PingData.expected(7, 100), 0, 99, StandardCharsets.US_ASCII), PingData.text(buf));
        buf.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 5, (byte) 0);
        assertEquals("rdma-", PingData.text(buf));
    }
}
