package rdmaflux.samples.mcast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The mcast sample briefly on the real device, run from its command line (the arguments of
 * {@code scripts/sample mcast ...}) in this JVM, against rdma-core's {@code mckey} (a subprocess) in
 * both roles and against itself. Every sender starts only after its receiver printed that it joined:
 * multicast datagrams sent before a join are lost, not queued. Each case uses a group of its own.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class McastIT {
    private static final int N = 20;
    /** Generous: under the sandbox's emulation the first join in a JVM alone can take several seconds. */
    private static final Duration T = Duration.ofSeconds(90);
    private static final String ADDR = RdmaTestEnv.address().getHostAddress();
    private static final Pattern QPN = Pattern.compile("qpn (\\d+)");

    @TempDir
    Path tmp;

    @Test
    void ourReceiverGetsWhatMckeySends() throws Exception {
        String group = "239.3.1.1";
        try (Sample receiver = Sample.start("-m", group, "-b", ADDR, "-C", Integer.toString(N), "-S", "100")) {
            int ourQpn = qpn(receiver.awaitLine("mcast: joined " + group));
            try (Mckey sender = Mckey.start(tmp, group, "-s", "-C", Integer.toString(N), "-S", "100")) {
                assertEquals(0, sender.awaitExit(), sender::describe);
                assertTrue(sender.output().contains("data transfers complete"), sender::describe);
            }
            assertEquals(0, receiver.awaitExit(), receiver::describe);
            List<String> datagrams = receiver.datagramLines();
            assertEquals(N, datagrams.size(), receiver::describe);
            // All from mckey's one QP, which is not ours: nothing of our own looped back.
            int mckeyQpn = qpn(datagrams.getFirst());
            assertNotEquals(ourQpn, mckeyQpn, receiver::describe);
            for (String line : datagrams) {
                assertEquals("mcast: 100 bytes from " + ADDR + " qpn " + mckeyQpn, line, receiver::describe);
            }
            assertTrue(receiver.lines().contains("mcast: received " + N + " datagrams"), receiver::describe);
        }
    }

    @Test
    void mckeyReceiverGetsWhatOurSenderSends() throws Exception {
        String group = "239.3.1.2";
        try (Mckey receiver = Mckey.start(tmp, group, "-C", Integer.toString(N), "-S", "100")) {
            // mckey posts its -C receives before it joins, so after this line nothing sent can be lost.
            receiver.awaitLine("mckey: joined");
            try (Sample sender = Sample.start("-m", group, "-b", ADDR, "-s", "-C", Integer.toString(N), "-S",
                    "100")) {
                assertEquals(0, sender.awaitExit(), sender::describe);
                assertTrue(sender.lines().contains("mcast: sent " + N + " datagrams of 100 bytes"), sender::describe);
            }
            // mckey's receiver polls until it has -C completions: its exit is the count.
            assertEquals(0, receiver.awaitExit(), receiver::describe);
            assertTrue(receiver.output().contains("receiving data transfers\ndata transfers complete\n"),
                    receiver::describe);
        }
    }

    @Test
    void ourSenderToOurReceiver() throws Exception {
        String group = "239.3.1.3";
        String size = "500";
        try (Sample receiver = Sample.start("-m", group, "-b", ADDR, "-C", Integer.toString(N), "-S", size)) {
            receiver.awaitLine("mcast: joined " + group);
            int senderQpn;
            try (Sample sender = Sample.start("-m", group, "-b", ADDR, "-s", "-C", Integer.toString(N), "-S", size)) {
                senderQpn = qpn(sender.awaitLine("mcast: joined " + group));
                assertEquals(0, sender.awaitExit(), sender::describe);
                assertTrue(sender.lines().contains("mcast: sent " + N + " datagrams of " + size + " bytes"),
                        sender::describe);
            }
            assertEquals(0, receiver.awaitExit(), receiver::describe);
            List<String> datagrams = receiver.datagramLines();
            assertEquals(N, datagrams.size(), receiver::describe);
            for (String line : datagrams) {
                assertEquals("mcast: " + size + " bytes from " + ADDR + " qpn " + senderQpn, line, receiver::describe);
            }
            assertTrue(receiver.lines().contains("mcast: received " + N + " datagrams"), receiver::describe);
        }
    }

    @Test
    void receiverWithoutSenderReportsTheShortCountAfterItsTimeout() throws Exception {
        String group = "239.3.1.4";
        try (Sample receiver = Sample.start("-m", group, "-b", ADDR, "-C", "3", "--timeout", "2")) {
            assertEquals(1, receiver.awaitExit(), receiver::describe);
            assertTrue(receiver.lines().contains("mcast: received 0 of 3 datagrams within 2 s"), receiver::describe);
        }
    }

    private static int qpn(String line) {
        Matcher m = QPN.matcher(line);
        assertTrue(m.find(), "no qpn in: " + line);
        return Integer.parseInt(m.group(1));
    }

    /** Polls {@code ready} until it returns a line or {@link #T} passes; {@code gone} says the producer ended. */
    private static String poll(Supplier<String> ready, BooleanSupplier gone,
            String what, Supplier<String> describe) throws InterruptedException {
        long end = System.nanoTime() + T.toNanos();
        for (;;) {
            String line = ready.get();
            if (line != null) {
                return line;
            }
            if (gone.getAsBoolean()) {
                // One more look: the line may have come with the exit.
                line = ready.get();
                if (line != null) {
                    return line;
                }
                throw new AssertionError("ended without printing \"" + what + "\": " + describe.get());
            }
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("no \"" + what + "\" within " + T + ": " + describe.get());
            }
            Thread.sleep(20);
        }
    }

    /**
     * The sample's command line executed in this JVM on a thread of its own, its output (stdout and
     * stderr, through picocli's writers) kept as lines the moment they are written.
     */
    private static final class Sample implements AutoCloseable {
        private final List<String> args;
        private final Lines output = new Lines();
        private final CompletableFuture<Integer> exit = new CompletableFuture<>();

        private Sample(List<String> args) {
            this.args = args;
        }

        static Sample start(String... args) {
            Sample s = new Sample(List.of(args));
            PrintWriter w = new PrintWriter(s.output, true);
            CommandLine cl = new CommandLine(new Mcast()).setOut(w).setErr(w);
            Thread.ofPlatform().daemon().name("mcast " + String.join(" ", args)).start(() -> {
                try {
                    s.exit.complete(cl.execute(args));
                } catch (Throwable t) {
                    s.exit.completeExceptionally(t);
                }
            });
            return s;
        }

        String awaitLine(String prefix) throws InterruptedException {
            return poll(() -> lines().stream().filter(l -> l.startsWith(prefix)).findFirst().orElse(null),
                    exit::isDone, prefix, this::describe);
        }

        int awaitExit() throws InterruptedException, ExecutionException {
            try {
                return exit.get(T.toSeconds(), TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("still running after " + T + ": " + describe());
            }
        }

        List<String> lines() {
            return output.lines();
        }

        /** The receiver's line per datagram, {@code mcast: SIZE bytes from ADDR qpn QPN}. */
        List<String> datagramLines() {
            return lines().stream().filter(l -> l.matches("mcast: \\d+ bytes from .*")).toList();
        }

        String describe() {
            return "mcast " + String.join(" ", args) + (exit.isDone() ? " (exit " + exit.getNow(null) + ")" : "")
                    + "\n--- output\n" + String.join("\n", lines());
        }

        /** Prints the output for the log; the sample ends by itself within its --timeout (default 60 s). */
        @Override
        public void close() {
            System.out.println(describe());
        }
    }

    /** A writer that splits what it is given into lines as it arrives, so no flush is needed to see them. */
    private static final class Lines extends Writer {
        private final List<String> lines = new ArrayList<>();
        private final StringBuilder partial = new StringBuilder();

        @Override
        public synchronized void write(char[] buf, int off, int len) {
            for (int i = off; i < off + len; i++) {
                if (buf[i] == '\n') {
                    lines.add(partial.toString());
                    partial.setLength(0);
                } else if (buf[i] != '\r') {
                    partial.append(buf[i]);
                }
            }
        }

        synchronized List<String> lines() {
            List<String> all = new ArrayList<>(lines);
            if (!partial.isEmpty()) {
                all.add(partial.toString());
            }
            return all;
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    /**
     * rdma-core's mckey as a subprocess, its output in a file (a pipe nobody drains could fill up and
     * stall it) and line-buffered by stdbuf, so a line is in the file as soon as mckey prints it.
     */
    private record Mckey(Process process, Path out, List<String> command) implements AutoCloseable {
        static Mckey start(Path dir, String group, String... more) throws IOException {
            List<String> command = new ArrayList<>(List.of("stdbuf", "-oL", "-eL", "mckey", "-m", group, "-b", ADDR));
            command.addAll(List.of(more));
            Path out = Files.createTempFile(dir, "mckey", ".out");
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            return new Mckey(p, out, command);
        }

        void awaitLine(String prefix) throws InterruptedException {
            poll(() -> output().lines().filter(l -> l.startsWith(prefix)).findFirst().orElse(null),
                    () -> !process.isAlive(), prefix, this::describe);
        }

        int awaitExit() throws InterruptedException {
            if (!process.waitFor(T.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("mckey still running after " + T + ": " + describe());
            }
            return process.exitValue();
        }

        String output() {
            try {
                return Files.readString(out, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(unreadable: " + e + ")";
            }
        }

        String describe() {
            return String.join(" ", command) + (process.isAlive() ? "" : " (exit " + process.exitValue() + ")")
                    + "\n--- output\n" + output();
        }

        @Override
        public void close() throws InterruptedException {
            System.out.println(describe());
            if (process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
