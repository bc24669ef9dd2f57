package rdmaflux.samples.devinfo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.CProgram;

/** {@link GidText} against glibc's {@code inet_ntop}, which is what ibv_devinfo prints RoCE v2 GIDs with. */
class GidTextTest {
    private static final List<String> GIDS = List.of(
            "fe800000000000000c4cb0fffeacf3f4",   // link-local, from a MAC
            "00000000000000000000ffffc0000201",   // IPv4-mapped 192.0.2.1
            "00000000000000000000000000000000",   // all zero
            "00000000000000000000000000000001",   // ::1
            "000000000000000000000000c0000201",   // IPv4-compatible
            "20010db8000000010000000000000001",   // zero run in the middle
            "20010db8000000000001000000000001",   // two runs of two: the first wins
            "20010db8000100010001000100010000",   // a single zero group is not shortened
            "fe80000000000000000000000000abcd",
            "ffffffffffffffffffffffffffffffff");

    @Test
    void formatsLikeGlibcInetNtop() {
        StringBuilder src = new StringBuilder("""
                #include <arpa/inet.h>
                #include <stdio.h>

                static void show(const unsigned char *raw) {
                    char buf[INET6_ADDRSTRLEN];
                    puts(inet_ntop(AF_INET6, raw, buf, sizeof buf));
                }

                int main(void) {
                """);
        for (String hex : GIDS) {
            src.append("    show((const unsigned char []) {");
            byte[] raw = HexFormat.of().parseHex(hex);
            for (int i = 0; i < raw.length; i++) {
                src.append(i == 0 ? "" : ", ").append(raw[i] & 0xff);
            }
            src.append("});\n");
        }
        src.append("    return 0;\n}\n");
        List<String> glibc = CProgram.of(src.toString()).run();

        List<String> ours = GIDS.stream().map(h -> GidText.of(HexFormat.of().parseHex(h))).toList();
        assertEquals(glibc, ours);
    }
}
