package rdmaflux.samples.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The command line, on the host. */
class MetricsDemoTest {

    @Test
    void helpListsTheOptions() {
        StringWriter out = new StringWriter();
        CommandLine cl = new CommandLine(new MetricsDemo());
        cl.setOut(new PrintWriter(out));
        assertEquals(0, cl.execute("--help"));
        String usage = out.toString();
        for (String option : new String[] {"--address", "--http-port", "--http-host", "--messages", "--size",
                "--rate", "--one-sided-every", "--linger"}) {
            assertTrue(usage.contains(option), option + " missing from\n" + usage);
        }
        assertTrue(usage.contains("/metrics"), usage);
    }

    @Test
    void optionsParse() {
        MetricsDemo d = new MetricsDemo();
        new CommandLine(d).parseArgs("-a", "192.0.2.1", "--http-port", "0", "-n", "300", "-S", "1024", "-r", "0");
        assertEquals("192.0.2.1", d.address);
        assertEquals(0, d.httpPort);
        assertEquals(300, d.messages);
        assertEquals(1024, d.size);
        assertEquals(0, d.rate);
        assertEquals(10, d.oneSidedEvery);
    }
}
