package rdmaflux.samples.ping;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.RemoteBuffer;

/** {@code struct rping_rdma_info} on the wire. */
class RpingInfoTest {

    @Test
    void encodesBigEndianBufRkeySize() {
        ByteBuffer b = new RpingInfo(0x0102030405060708L, 0x0A0B0C0D, 64).encode();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D, 0, 0, 0, 64}, bytes);
        assertEquals(RpingInfo.BYTES, bytes.length);
    }

    @Test
    void decodeRoundTripsAndMapsToARemoteBuffer() {
        RemoteBuffer remote = new RemoteBuffer(0x7f00_1234_5000L, 65535, 0xCAFEBABE);
        RpingInfo info = RpingInfo.decode(RpingInfo.of(remote).encode());
        assertEquals(new RpingInfo(0x7f00_1234_5000L, 0xCAFEBABE, 65535), info);
        assertEquals(remote, info.remote());
    }

    @Test
    void sizeIsUnsigned() {
        assertEquals(0xFFFF_FFFFL, new RpingInfo(0, 1, -1).remote().length());
    }

    @Test
    void theGoMessageIsSixteenZeros() {
        ByteBuffer go = RpingInfo.GO.encode();
        assertEquals(16, go.remaining());
        while (go.hasRemaining()) {
            assertEquals(0, go.get());
        }
    }

    @Test
    void anyOtherLengthIsBogus() {
        RpingException e = assertThrows(RpingException.class, () -> RpingInfo.decode(ByteBuffer.allocate(20)));
        assertEquals("received bogus data, size 20 (rping messages are 16 bytes)", e.getMessage());
        assertThrows(RpingException.class, () -> RpingInfo.decode(ByteBuffer.allocate(0)));
    }
}
