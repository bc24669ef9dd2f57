package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.Datagram;


import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.Gid;

/** Decoding of received UD buffers: the GRH layouts and the payload copy. */
class DatagramTest {
    /** A GRH exactly as rxe wrote it in the sandbox for a multicast datagram from 192.0.2.1 to 239.1.1.10. */
    private static final byte[] ROCE_V2_IPV4 = HexFormat.of().parseHex(
            "0000000000000000000000000000000000000000" + "4500009cf6704000401191d3c0000201ef01010a");

    @Test
    void roceV2Ipv4HeaderSitsInTheLastTwentyBytes() throws Exception {
        GrhAddresses.Addresses a = GrhAddresses.parseGrh(ROCE_V2_IPV4);
        assertEquals(InetAddress.getByName("192.0.2.1"), a.source());
        assertEquals(InetAddress.getByName("239.1.1.10"), a.destination());
        assertEquals("0000:0000:0000:0000:0000:ffff:c000:0201", a.sourceGid().toString());
    }

    @Test
    void ipv6GrhCarriesGids() throws Exception {
        byte[] h = new byte[40];
        h[0] = 0x60;
        byte[] src = InetAddress.getByName("fe80::1").getAddress();
        byte[] dst = InetAddress.getByName("ff0e::1:2").getAddress();
        System.arraycopy(src, 0, h, 8, 16);
        System.arraycopy(dst, 0, h, 24, 16);
        GrhAddresses.Addresses a = GrhAddresses.parseGrh(h);
        assertEquals(Gid.of(src), a.sourceGid());
        assertEquals(InetAddress.getByName("fe80::1"), a.source());
        assertEquals(InetAddress.getByName("ff0e::1:2"), a.destination());
    }

    @Test
    void grhMustBeFortyBytes() {
        assertThrows(IllegalArgumentException.class, () -> GrhAddresses.parseGrh(new byte[39]));
    }

    @Test
    void receiveCopiesPayloadBehindTheGrh() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1088);
            MemorySegment.copy(ROCE_V2_IPV4, 0, buf, ValueLayout.JAVA_BYTE, 0, 40);
            byte[] payload = "hello multicast".getBytes();
            MemorySegment.copy(payload, 0, buf, ValueLayout.JAVA_BYTE, 40, payload.length);
            Datagram d = GrhAddresses.fromReceive(buf, 0, 40 + payload.length, true, 0x7F000011, true, 0x1234,
                    new GrhAddresses(), null);
            // The copy must not change when the buffer is reused for the next receive.
            buf.fill((byte) 0);
            assertArrayEquals(payload, d.toByteArray());
            assertEquals(payload.length, d.length());
            assertEquals(0x11, d.sourceQpn(), "QP numbers have 24 bits");
            assertEquals(OptionalInt.of(0x1234), d.immediate());
            assertEquals(InetAddress.getByName("192.0.2.1"), d.source());
            assertEquals(InetAddress.getByName("239.1.1.10"), d.destination());
            ByteBuffer view = d.data();
            assertTrue(view.isReadOnly());
            assertEquals(payload.length, view.remaining());
        }
    }

    @Test
    void receiveWithoutGrhHasNoSource() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(64);
            buf.set(ValueLayout.JAVA_INT, 0, 42);
            Datagram d = GrhAddresses.fromReceive(buf, 0, 4, false, 5, false, 0, new GrhAddresses(), null);
            assertEquals(4, d.length());
            assertNull(d.source());
            assertNull(d.sourceGid());
            assertFalse(d.immediate().isPresent());
        }
    }

    @Test
    void emptyDatagram() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(64);
            MemorySegment.copy(ROCE_V2_IPV4, 0, buf, ValueLayout.JAVA_BYTE, 0, 40);
            assertEquals(0, GrhAddresses.fromReceive(buf, 0, 40, true, 5, false, 0, new GrhAddresses(), null).length());
        }
    }

    /**
     * Addresses are parsed once per source and destination: a header whose IPv4 identification and checksum
     * changed (every packet's do) gives the same parsed object; another source, or a GID header, is parsed.
     */
    @Test
    void addressesAreParsedOncePerSourceAndDestination() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(128);
            GrhAddresses cache = new GrhAddresses();
            MemorySegment.copy(ROCE_V2_IPV4, 0, buf, ValueLayout.JAVA_BYTE, 64, 40);
            GrhAddresses.Addresses first = cache.of(buf, 64);
            buf.set(ValueLayout.JAVA_BYTE, 64 + 24, (byte) 0x11); // identification
            buf.set(ValueLayout.JAVA_BYTE, 64 + 30, (byte) 0x22); // checksum
            assertSame(first, cache.of(buf, 64));
            buf.set(ValueLayout.JAVA_BYTE, 64 + 35, (byte) 2); // source 192.0.2.2
            GrhAddresses.Addresses other = cache.of(buf, 64);
            assertNotSame(first, other);
            assertEquals(InetAddress.getByName("192.0.2.2"), other.source());
            assertEquals(InetAddress.getByName("239.1.1.10"), other.destination());

            byte[] h = new byte[40];
            h[0] = 0x60;
            byte[] src = InetAddress.getByName("fe80::1").getAddress();
            System.arraycopy(src, 0, h, 8, 16);
            System.arraycopy(InetAddress.getByName("ff0e::1:2").getAddress(), 0, h, 24, 16);
            MemorySegment.copy(h, 0, buf, ValueLayout.JAVA_BYTE, 0, 40);
            GrhAddresses.Addresses gids = cache.of(buf, 0);
            assertEquals(Gid.of(src), gids.sourceGid());
            assertEquals(InetAddress.getByName("ff0e::1:2"), gids.destination());
            assertSame(gids, cache.of(buf, 0));
        }
    }
}
