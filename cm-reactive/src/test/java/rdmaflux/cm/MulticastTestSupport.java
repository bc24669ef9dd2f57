package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

import rdmaflux.testing.RdmaResources;

/** Helpers for the multicast and datagram integration tests: rdma-core tools as subprocesses, waiting. */
final class MulticastTestSupport {
    private MulticastTestSupport() {
    }

    /** A running rdma-core example program whose output is collected line by line. */
    static final class Tool implements AutoCloseable {
        private final Process process;
        private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final StringBuffer all = new StringBuffer();
        private final Thread reader;

        /** Starts the command with line-buffered stdout (stdbuf), so lines arrive as they are printed. */
        Tool(List<String> command) {
            try {
                process = new ProcessBuilder(concat(List.of("stdbuf", "-oL", "-eL"), command))
                        .redirectErrorStream(true).start();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot start " + command, e);
            }
            reader = Thread.ofPlatform().daemon().name("tool-" + command.getFirst()).start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        all.append(line).append('\n');
                        lines.add(line);
                    }
                } catch (IOException e) {
                    all.append("[output read failed: ").append(e).append("]\n");
                }
            });
        }

        private static List<String> concat(List<String> a, List<String> b) {
            java.util.ArrayList<String> l = new java.util.ArrayList<>(a);
            l.addAll(b);
            return l;
        }

        /** Waits for a line matching {@code p}; fails with the output so far. */
        String awaitLine(Predicate<String> p, Duration timeout) throws InterruptedException {
            long end = System.nanoTime() + timeout.toNanos();
            for (;;) {
                long left = end - System.nanoTime();
                String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
                if (line == null) {
                    throw new AssertionError("no matching line within " + timeout + "; output:\n" + all);
                }
                if (p.test(line)) {
                    return line;
                }
            }
        }

        /** Waits for the exit; fails (and kills the process) when it does not end in time. */
        int exitCode(Duration timeout) throws InterruptedException {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the tool did not exit within " + timeout + "; output:\n" + all);
            }
            reader.join(5_000);
            return process.exitValue();
        }

        String output() {
            return all.toString();
        }

        @Override
        public void close() {
            if (process.isAlive()) {
                process.destroyForcibly();
            }
        }
    }

    /** Polls until {@code condition} holds; fails with {@code what} after {@code timeout}. */
    static void await(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(2);
        }
    }

    /**
     * The kernel's object counts that the library must give back. {@code ctx} is left out: librdmacm
     * opens a device's verbs context the first time an id binds to it and keeps it for the life of
     * the process, so it is not ours to free. The shared loops' protection domain, which lives as long as
     * those loops, is made first ({@link Resources#sharedDomain()}).
     */
    static Map<String, Integer> resources() {
        Resources.sharedDomain();
        Map<String, Integer> m = new java.util.TreeMap<>(RdmaResources.snapshot());
        m.remove("ctx");
        return m;
    }

    /** Waits until the kernel's object counts are back at {@code baseline} (teardown is asynchronous). */
    static void awaitResources(Map<String, Integer> baseline, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        Map<String, Integer> now = resources();
        while (!now.equals(baseline) && System.nanoTime() - end < 0) {
            Thread.sleep(50);
            now = resources();
        }
        assertEquals(baseline, now, "kernel RDMA objects after everything was disposed");
    }

    /** A payload of {@code size} bytes starting with {@code seq}, then a recognizable pattern. */
    static ByteBuffer payload(int seq, int size) {
        ByteBuffer b = ByteBuffer.allocate(size);
        if (size >= 4) {
            b.putInt(seq);
        }
        while (b.hasRemaining()) {
            b.put((byte) (seq + b.position()));
        }
        return b.flip();
    }

    static int seq(Datagram d) {
        return d.data().getInt(0);
    }

    /** Whether a datagram is exactly {@link #payload(int, int)}. */
    static boolean isPayload(Datagram d, int seq, int size) {
        return d.data().equals(payload(seq, size));
    }
}
