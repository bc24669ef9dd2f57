package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class WireTest {

    private static final byte[] APP = "hello".getBytes(StandardCharsets.US_ASCII);

    @Test
    void helloRoundTripsWithApplicationData() {
        byte[] wire = Wire.hello(32, 8192, APP);
        assertEquals(Wire.HEADER + APP.length, wire.length);
        Wire.Hello h = Wire.parse(wire);
        assertNotNull(h);
        assertEquals(32, h.credits());
        assertEquals(8192, h.bufferSize());
        assertArrayEquals(APP, h.applicationData());
    }

    @Test
    void helloWithoutApplicationDataIsExactlyTheHeader() {
        byte[] wire = Wire.hello(1, 64, new byte[0]);
        assertEquals(Wire.HEADER, wire.length);
        Wire.Hello h = Wire.parse(wire);
        assertNotNull(h);
        assertEquals(0, h.applicationData().length);
    }

    @Test
    void headerLayoutIsBigEndianMagicVersionFlagsCreditsSize() {
        // The layout is the protocol: a peer in another language must be able to read it.
        byte[] wire = Wire.hello(0x0102, 0x0A0B0C0D, new byte[0]);
        assertArrayEquals("RFX1".getBytes(StandardCharsets.US_ASCII), Arrays.copyOfRange(wire, 0, 4));
        assertEquals(Wire.VERSION, wire[4]);
        assertEquals(0, wire[5]);
        assertArrayEquals(new byte[] {0x01, 0x02}, Arrays.copyOfRange(wire, 6, 8));
        assertArrayEquals(new byte[] {0x0A, 0x0B, 0x0C, 0x0D}, Arrays.copyOfRange(wire, 8, 12));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 0x7FFF, 0x8000, 40_000, 0xFFFF})
    void creditsAreUnsigned16Bit(int credits) {
        Wire.Hello h = Wire.parse(Wire.hello(credits, 4096, new byte[0]));
        assertNotNull(h);
        assertEquals(credits, h.credits());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 4096, 1 << 20, Integer.MAX_VALUE})
    void bufferSizeRoundTrips(int size) {
        Wire.Hello h = Wire.parse(Wire.hello(8, size, new byte[0]));
        assertNotNull(h);
        assertEquals(size, h.bufferSize());
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 4, 11})
    void shorterThanTheHeaderIsNotOurs(int length) {
        byte[] truncated = Arrays.copyOf(Wire.hello(8, 4096, new byte[0]), length);
        assertNull(Wire.parse(truncated));
    }

    @Test
    void theClaimedVersionTellsAnotherRdmafluxFromAForeignPeer() {
        byte[] future = Wire.hello(8, 4096, new byte[0]);
        future[4] = 9;
        assertNull(Wire.parse(future));
        assertEquals(9, Wire.claimedVersion(future));
        assertEquals(Wire.VERSION, Wire.claimedVersion(Wire.hello(8, 4096, new byte[0])));
        assertEquals(-1, Wire.claimedVersion(new byte[Wire.MAX_CONNECT_PRIVATE_DATA]));
        assertEquals(-1, Wire.claimedVersion(Arrays.copyOf(future, 4)));
        assertEquals(-1, Wire.claimedVersion(null));
    }

    @Test
    void zeroPaddedPrivateDataOfAForeignPeerIsNotOurs() {
        // What an rping client's connect request carries on RoCE: no data, padded to 56 bytes by the CM.
        assertNull(Wire.parse(new byte[Wire.MAX_CONNECT_PRIVATE_DATA]));
    }

    @Test
    void wrongMagicIsNotOurs() {
        byte[] wire = Wire.hello(8, 4096, APP);
        wire[3] = '2';
        assertNull(Wire.parse(wire));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 3, 0xFF})
    void otherVersionsAreNotOurs(int version) {
        byte[] wire = Wire.hello(8, 4096, APP);
        wire[4] = (byte) version;
        assertNull(Wire.parse(wire));
    }

    @Test
    void aVersionOnePeerIsUnderstoodWithoutLargeMessages() {
        byte[] wire = Wire.hello(8, 4096, APP);
        assertTrue(Wire.parse(wire).largeMessages());
        wire[4] = 1;
        Wire.Hello old = Wire.parse(wire);
        assertEquals(8, old.credits());
        assertFalse(old.largeMessages());
    }

    @Test
    void anApplicationLengthBeyondTheDataIsNotOurs() {
        // Byte 5 is the application data length; one that overruns the private data is not a hello.
        byte[] wire = Wire.hello(8, 4096, APP);
        wire[5] = (byte) 0xFF;
        assertNull(Wire.parse(wire));
    }

    @Test
    void cmPaddingIsTrimmedFromTheApplicationData() {
        // The CM pads private data with zeros; the header's length byte keeps them from the application.
        byte[] padded = Arrays.copyOf(Wire.hello(8, 4096, APP), Wire.MAX_CONNECT_PRIVATE_DATA);
        Wire.Hello h = Wire.parse(padded);
        assertNotNull(h);
        assertArrayEquals(APP, h.applicationData());
    }

    @Test
    void parsedApplicationDataDoesNotAliasTheInput() {
        // The input is usually a view of a native event buffer that the next event overwrites.
        byte[] wire = Wire.hello(8, 4096, APP);
        Wire.Hello h = Wire.parse(wire);
        assertNotNull(h);
        wire[Wire.HEADER] = 'X';
        assertArrayEquals(APP, h.applicationData());
    }

    @Test
    void helloDoesNotAliasTheApplicationData() {
        byte[] app = APP.clone();
        byte[] wire = Wire.hello(8, 4096, app);
        app[0] = 'X';
        assertEquals('h', wire[Wire.HEADER]);
    }

    @Test
    void immediateDataBitsDoNotOverlapAndCoverAllThirtyTwoBits() {
        int finished = Wire.FINISHED << Wire.FINISHED_SHIFT;
        int[] fields = {Wire.CONTROL, Wire.CLOSE, Wire.LARGE, finished, Wire.CREDITS};
        int all = 0;
        for (int f : fields) {
            assertEquals(0, all & f, Integer.toHexString(f) + " overlaps");
            all |= f;
        }
        assertEquals(-1, all);
        assertEquals(0x8000_0000, Wire.CONTROL);
        assertEquals(0x4000_0000, Wire.CLOSE);
        assertEquals(0x2000_0000, Wire.LARGE);
        assertEquals(0x1FFF_0000, finished);
        assertEquals(0xFFFF, Wire.CREDITS);
    }

    @Test
    void creditsFieldHoldsAnyCreditCountTheHeaderCanGrant() {
        // Credits returned in immediate data must never spill into the CLOSE or CONTROL bits.
        int imm = Wire.CONTROL | 0xFFFF;
        assertEquals(0xFFFF, imm & Wire.CREDITS);
        assertEquals(0, imm & Wire.CLOSE);
    }

    @Test
    void magicSpellsRfx1() {
        assertEquals("RFX1", new String(ByteBuffer.allocate(4).putInt(Wire.MAGIC).array(),
                StandardCharsets.US_ASCII));
        assertEquals(12, Wire.HEADER);
        assertEquals(56, Wire.MAX_CONNECT_PRIVATE_DATA);
    }
}
