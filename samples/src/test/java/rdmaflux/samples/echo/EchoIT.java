package rdmaflux.samples.echo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/** The echo sample briefly, with and without a slow consumer. */
class EchoIT {
    private static final Pattern SENT = Pattern.compile("client: sent (\\d+) messages of \\d+ bytes in ([0-9.]+) s");

    private static String run(String... extra) {
        String[] args = java.util.stream.Stream.concat(java.util.stream.Stream.of("-a",
                RdmaTestEnv.address().getHostAddress(), "-p", Integer.toString(7600 + extra.length), "-t", "2",
                "-i", "500", "-b", "8"), java.util.Arrays.stream(extra)).toArray(String[]::new);
        StringWriter buf = new StringWriter();
        int rc = new CommandLine(new Echo()).setOut(new PrintWriter(buf)).execute(args);
        String out = buf.toString();
        System.out.print(out);
        assertEquals(0, rc, out);
        assertTrue(out.contains("echoes verified"), out);
        assertTrue(out.contains("msg/s"), out);
        return out;
    }

    @Test
    void echoesEveryMessage() {
        String out = run();
        Matcher m = SENT.matcher(out);
        assertTrue(m.find(), out);
        assertTrue(Long.parseLong(m.group(1)) > 0, out);
    }

    @Test
    void slowConsumerHoldsTheSenderBack() {
        String out = run("--slow-consumer", "50");
        assertTrue(out.contains("consuming one message per 50 ms"), out);
        Matcher m = SENT.matcher(out);
        assertTrue(m.find(), out);
        long sent = Long.parseLong(m.group(1));
        double seconds = Double.parseDouble(m.group(2));
        // Flow control, not speed: the client can only be ahead of what the server consumed by the 8
        // credits it was granted, and the server consumes at most one message per 50 ms.
        long bound = 8 + (long) Math.ceil(seconds * 1000 / 50) + 1;
        assertTrue(sent > 0 && sent <= bound, "sent " + sent + " in " + seconds + " s; credits allow at most " + bound);
    }
}
