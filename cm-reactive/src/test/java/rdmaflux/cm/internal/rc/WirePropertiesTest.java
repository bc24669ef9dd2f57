package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/**
 * The hello parser reads bytes a peer chose: for any input it returns a hello or {@code null} and never
 * throws; whatever it returns is consistent with the bytes; encoding and parsing round-trip.
 */
class WirePropertiesTest {

    @Test
    void anyBytesParseToAHelloOrNullWithoutThrowing() {
        RandomCases.run(2000, r -> {
            byte[] data = RandomCases.bytes(r, 300);
            Wire.Hello h = Wire.parse(data);
            if (h != null) {
                assertConsistent(data, h);
            }
        });
    }

    /** Random bytes rarely start with the magic: these do, so the fields behind it get exercised. */
    @Test
    void bytesBehindAValidMagicAndVersionParseConsistently() {
        RandomCases.run(2000, r -> bytesBehindAValidMagicAndVersion(ourHeaderThenNoise(r)));
    }

    private static void bytesBehindAValidMagicAndVersion(byte[] data) {
        Wire.Hello h = Wire.parse(data);
        ByteBuffer b = ByteBuffer.wrap(data);
        int appLength = Byte.toUnsignedInt(data[5]);
        int size = b.getInt(8);
        if (size <= 0 || Wire.HEADER + appLength > data.length) {
            assertNull(h, "a negative size or an overrunning length is not a hello");
        } else {
            assertNotNull(h);
            assertConsistent(data, h);
        }
    }

    @Test
    void helloRoundTrips() {
        RandomCases.run(1000, r -> {
            int bufferSize = RandomCases.anyInt(r);
            helloRoundTrips(r.nextInt(0x10000), bufferSize > 0 ? bufferSize : 1 + r.nextInt(Integer.MAX_VALUE),
                    RandomCases.bytes(r, 255), r.nextInt(65));
        });
    }

    private static void helloRoundTrips(int credits, int bufferSize, byte[] app, int cmPadding) {
        byte[] wire = Wire.hello(credits, bufferSize, app);
        // The CM pads private data with zeros; that must not change what is read.
        Wire.Hello h = Wire.parse(Arrays.copyOf(wire, wire.length + cmPadding));
        assertNotNull(h);
        assertEquals(credits, h.credits());
        assertEquals(bufferSize, h.bufferSize());
        assertArrayEquals(app, h.applicationData());
    }

    @Test
    void valuesThatDoNotFitTheirFieldAreRefusedNotTruncated() {
        RandomCases.run(500, r -> refusedNotTruncated(RandomCases.anyInt(r), RandomCases.anyInt(r), r.nextInt(301)));
    }

    private static void refusedNotTruncated(int credits, int bufferSize, int appLength) {
        boolean fits = credits >= 0 && credits <= 0xFFFF && bufferSize > 0 && appLength <= 255;
        byte[] app = new byte[appLength];
        if (fits) {
            assertEquals(Wire.HEADER + appLength, Wire.hello(credits, bufferSize, app).length);
        } else {
            assertThrows(IllegalArgumentException.class, () -> Wire.hello(credits, bufferSize, app));
        }
    }

    @Test
    void nullPrivateDataIsNoHello() {
        assertNull(Wire.parse(null));
    }

    private static byte[] ourHeaderThenNoise(Random r) {
        byte[] d = new byte[Wire.HEADER + r.nextInt(300 - Wire.HEADER + 1)];
        r.nextBytes(d);
        ByteBuffer.wrap(d).putInt(Wire.MAGIC).put((byte) Wire.VERSION);
        return d;
    }

    private static void assertConsistent(byte[] data, Wire.Hello h) {
        ByteBuffer b = ByteBuffer.wrap(data);
        assertEquals(Wire.MAGIC, b.getInt(0));
        assertEquals(Wire.VERSION, data[4]);
        assertEquals(Short.toUnsignedInt(b.getShort(6)), h.credits());
        assertEquals(b.getInt(8), h.bufferSize());
        int appLength = Byte.toUnsignedInt(data[5]);
        assertArrayEquals(Arrays.copyOfRange(data, Wire.HEADER, Wire.HEADER + appLength), h.applicationData());
        assertEquals(true, h.bufferSize() > 0);
    }
}
