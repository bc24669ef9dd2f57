package rdmaflux.samples.ping;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/** The command line: rping's flags and limits, checked before anything touches RDMA. */
class RpingCommandTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        Rping rping = new Rping(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        CommandLine cl = new CommandLine(rping);
        cl.setOut(new java.io.PrintWriter(out, true, StandardCharsets.UTF_8));
        cl.setErr(new java.io.PrintWriter(err, true, StandardCharsets.UTF_8));
        return cl.execute(args);
    }

    private String stderr() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void helpListsRpingsFlags() {
        assertEquals(0, run("--help"));
        String help = out.toString(StandardCharsets.UTF_8);
        for (String flag : new String[] {"-s", "-c", "-a=addr", "-p=port", "-C=count", "-S=size", "-v", "-V", "-P"}) {
            assertTrue(help.contains(flag), flag + " missing from " + help);
        }
        assertTrue(help.contains("default: 7174"), help);
    }

    @Test
    void clusteredFlagsParseLikeGetopt() {
        Rping rping = new Rping();
        new CommandLine(rping).parseArgs("-svV", "-C", "20", "-S", "1000", "-p", "9999");
        assertTrue(rping.server && rping.verbose && rping.validate);
        assertEquals(20, rping.count);
        assertEquals(1000, rping.size);
        assertEquals(9999, rping.port);
    }

    @Test
    void sizesOutsideRpingsRangeAreRefused() {
        assertEquals(2, run("-s", "-S", "25"));
        assertTrue(stderr().contains("invalid size 25 (valid range is 26 to 65535)"), stderr());
        assertEquals(2, run("-s", "-S", "65536"));
    }

    @Test
    void negativeCountIsRefused() {
        assertEquals(2, run("-s", "-C", "-1"));
        assertTrue(stderr().contains("invalid count -1"), stderr());
    }

    @Test
    void serverAndClientAreExclusive() {
        assertEquals(2, run("-s", "-c", "-a", "192.0.2.1"));
        assertTrue(stderr().contains("exclusive"), stderr());
    }

    @Test
    void persistentNeedsServer() {
        assertEquals(2, run("-c", "-P", "-a", "192.0.2.1"));
        assertTrue(stderr().contains("-P is for servers"), stderr());
    }

    @Test
    void connectionsUseRawSends() {
        assertEquals(rdmaflux.cm.ConnectionOptions.Protocol.RAW, Rping.connectionOptions().protocol());
        assertTrue(Rping.connectionOptions().bufferSize() >= RpingInfo.BYTES);
    }
}
