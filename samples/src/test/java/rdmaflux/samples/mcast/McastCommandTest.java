package rdmaflux.samples.mcast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/** The command line: mckey's flags, checked before anything touches RDMA. */
class McastCommandTest {
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return new CommandLine(new Mcast()).setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
                .execute(args);
    }

    @Test
    void helpPrintsUsageWithMckeysFlags() {
        assertEquals(0, run("--help"));
        String help = out.toString();
        assertTrue(help.startsWith("Usage: mcast "), help);
        for (String flag : new String[] {"-m=<group>", "-b=<bind>", "-s ", "-C=<count>", "-S=<size>", "--timeout"}) {
            assertTrue(help.contains(flag), flag + " missing from " + help);
        }
        assertTrue(help.contains("compatible with rdma-core's mckey"), help);
    }

    @Test
    void parsesMckeysCommandLine() {
        Mcast m = new Mcast();
        new CommandLine(m).parseArgs("-m", "239.1.2.3", "-b", "192.0.2.1", "-s", "-C", "20", "-S", "1000");
        assertEquals("239.1.2.3", m.group);
        assertEquals("192.0.2.1", m.bind);
        assertTrue(m.send);
        assertEquals(20, m.count);
        assertEquals(1000, m.size);
    }

    @Test
    void groupIsRequired() {
        assertEquals(2, run("-s"));
        assertTrue(err.toString().contains("Missing required option: '-m=<group>'"), err.toString());
    }

    @Test
    void negativeCountIsRefusedBeforeAnyRdma() {
        assertEquals(2, run("-m", "239.1.2.3", "-b", "192.0.2.1", "-C", "-1"));
        assertTrue(err.toString().contains("-C must be at least 0"), err.toString());
    }
}
