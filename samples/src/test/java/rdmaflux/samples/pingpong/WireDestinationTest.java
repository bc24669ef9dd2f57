package rdmaflux.samples.pingpong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.CProgram;
import rdmaflux.verbs.Gid;

/** The 52-byte address record against what rc_pingpong.c's own code (gid_to_wire_gid, sprintf) writes. */
class WireDestinationTest {
    private static final byte[] GID = HexFormat.of().parseHex("00000000000000000000ffffc0000201");

    @Test
    void sameBytesAsTheCExamples() {
        // pingpong.c's gid_to_wire_gid and the sprintf of pp_*_exch_dest, printed as hex of all sizeof msg bytes.
        List<String> out = CProgram.of("""
                #include <stdio.h>
                #include <string.h>
                #include <stdint.h>
                #include <endian.h>
                int main(void) {
                    unsigned char gid[16] = {0,0,0,0,0,0,0,0,0,0,0xff,0xff,0xc0,0,2,1};
                    char wgid[33];
                    uint32_t tmp[4];
                    char msg[sizeof "0000:000000:000000:00000000000000000000000000000000"];
                    memset(msg, 0x55, sizeof msg);
                    memcpy(tmp, gid, sizeof tmp);
                    for (int i = 0; i < 4; ++i)
                        sprintf(&wgid[i * 8], "%08x", htobe32(tmp[i]));
                    sprintf(msg, "%04x:%06x:%06x:%s", 0x12, 0x1a2b3c, 0xabcdef, wgid);
                    printf("%zu\\n", sizeof msg);
                    for (size_t i = 0; i < sizeof msg; i++) printf("%02x", (unsigned char) msg[i]);
                    printf("\\n");
                    return 0;
                }
                """).run();
        WireDestination d = new WireDestination(0x12, 0x1a2b3c, 0xabcdef, Gid.of(GID));
        assertEquals(Integer.toString(WireDestination.SIZE), out.get(0));
        assertEquals(out.get(1), HexFormat.of().formatHex(d.toWire()));
        assertEquals(d, WireDestination.parse(HexFormat.of().parseHex(out.get(1))));
    }

    @Test
    void parsesAZeroGidAndRejectsGarbage() {
        byte[] zero = "0000:000011:000022:00000000000000000000000000000000\0".getBytes(StandardCharsets.US_ASCII);
        WireDestination d = WireDestination.parse(zero);
        assertEquals(new WireDestination(0, 0x11, 0x22, Gid.ZERO), d);
        assertArrayEquals(zero, d.toWire());
        assertThrows(IllegalArgumentException.class,
                () -> WireDestination.parse("hello".getBytes(StandardCharsets.US_ASCII)));
        assertThrows(IllegalArgumentException.class, () -> WireDestination.parse(
                "zzzz:000011:000022:00000000000000000000000000000000\0".getBytes(StandardCharsets.US_ASCII)));
    }
}
