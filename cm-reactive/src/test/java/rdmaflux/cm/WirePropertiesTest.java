package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Arrays;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The hello parser reads bytes a peer chose: for any input it returns a hello or {@code null} and never
 * throws; whatever it returns is consistent with the bytes; encoding and parsing round-trip.
 */
class WirePropertiesTest {

    @Property(tries = 2000)
    void anyBytesParseToAHelloOrNullWithoutThrowing(@ForAll @Size(max = 300) byte[] data) {
        Wire.Hello h = Wire.parse(data);
        if (h != null) {
            assertConsistent(data, h);
        }
    }

    /** Random bytes rarely start with the magic: these do, so the fields behind it get exercised. */
    @Property(tries = 2000)
    void bytesBehindAValidMagicAndVersionParseConsistently(@ForAll("ourHeaderThenNoise") byte[] data) {
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

    @Property(tries = 1000)
    void helloRoundTrips(@ForAll @IntRange(min = 0, max = 0xFFFF) int credits,
                         @ForAll @IntRange(min = 1) int bufferSize,
                         @ForAll @Size(max = 255) byte[] app,
                         @ForAll @IntRange(min = 0, max = 64) int cmPadding) {
        byte[] wire = Wire.hello(credits, bufferSize, app);
        // The CM pads private data with zeros; that must not change what is read.
        Wire.Hello h = Wire.parse(Arrays.copyOf(wire, wire.length + cmPadding));
        assertNotNull(h);
        assertEquals(credits, h.credits());
        assertEquals(bufferSize, h.bufferSize());
        assertArrayEquals(app, h.applicationData());
    }

    @Property(tries = 500)
    void valuesThatDoNotFitTheirFieldAreRefusedNotTruncated(@ForAll int credits, @ForAll int bufferSize,
                                                           @ForAll @IntRange(min = 0, max = 300) int appLength) {
        boolean fits = credits >= 0 && credits <= 0xFFFF && bufferSize > 0 && appLength <= 255;
        byte[] app = new byte[appLength];
        if (fits) {
            assertEquals(Wire.HEADER + appLength, Wire.hello(credits, bufferSize, app).length);
        } else {
            assertThrows(IllegalArgumentException.class, () -> Wire.hello(credits, bufferSize, app));
        }
    }

    @Example
    void nullPrivateDataIsNoHello() {
        assertNull(Wire.parse(null));
    }

    @Provide
    Arbitrary<byte[]> ourHeaderThenNoise() {
        return Arbitraries.bytes().array(byte[].class).ofMinSize(Wire.HEADER).ofMaxSize(300).map(d -> {
            ByteBuffer.wrap(d).putInt(Wire.MAGIC).put((byte) Wire.VERSION);
            return d;
        });
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
