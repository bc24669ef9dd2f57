package rdmaflux.samples.ping;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import reactor.core.Exceptions;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The ping sample against rdma-core's own {@code rping} (a subprocess), in both roles, and against
 * itself. Every side verifies the data: rping's client with {@code -V}, rping's server through the
 * exact text it prints, and ours through {@link RpingResult#verified()} and its printed lines.
 */
class RpingInteropIT {
    private static final int N = 20;
    private static final Duration T = Duration.ofSeconds(90);

    @TempDir
    Path tmp;

    private final InetAddress address = RdmaTestEnv.address();

    /** The lines rping prints for N pings of {@code size} bytes with {@code -v}, after {@code prefix}. */
    private static List<String> pingLines(String prefix, int size) {
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            lines.add(prefix + new String(PingData.expected(i, size), 0, size - 1, StandardCharsets.US_ASCII));
        }
        return lines;
    }

    @Test
    void ourClientAgainstRpingServer() throws Exception {
        int port = freePort();
        RpingProcess rping = RpingProcess.start(tmp, "-s", "-a", address.getHostAddress(), "-p", Integer.toString(port),
                "-C", Integer.toString(N), "-V", "-v");
        try {
            rping.awaitListening(port);
            List<String> ours = Collections.synchronizedList(new ArrayList<>());
            RpingResult result = RpingClient.run(new InetSocketAddress(address, port),
                    new RpingSettings(RpingSettings.DEFAULT_SIZE, N, true, true), ours::add).block(T);
            assertEquals(new RpingResult(N, N), result);
            assertEquals(pingLines("ping data: ", RpingSettings.DEFAULT_SIZE), ours);
            assertEquals(0, rping.awaitExit(), rping::describe);
            // rping's server does not validate; the exact text it read from our source is the check.
            assertEquals(pingLines("server ping data: ", RpingSettings.DEFAULT_SIZE), rping.stdout(), rping::describe);
        } finally {
            rping.destroy();
        }
    }

    @Test
    void rpingClientAgainstOurServer() throws Exception {
        int size = 1000;
        List<String> ours = Collections.synchronizedList(new ArrayList<>());
        try (RpingServer server = RpingServer.bind(new InetSocketAddress(address, 0),
                new RpingSettings(size, N, true, true), ours::add).block(T)) {
            CompletableFuture<RpingResult> served = server.serveOne().toFuture();
            RpingProcess rping = RpingProcess.start(tmp, "-c", "-a", address.getHostAddress(), "-p",
                    Integer.toString(server.address().getPort()), "-C", Integer.toString(N), "-S",
                    Integer.toString(size), "-V", "-v");
            try {
                assertEquals(0, rping.awaitExit(), rping::describe);
                // rping -V compared each echo with its source; a mismatch would have failed its exit status.
                assertFalse(rping.stderr().contains("data mismatch"), rping::describe);
                assertEquals(pingLines("ping data: ", size), rping.stdout(), rping::describe);
                assertEquals(new RpingResult(N, N), served.get(T.toSeconds(), TimeUnit.SECONDS));
                assertEquals(pingLines("server ping data: ", size), ours);
            } finally {
                rping.destroy();
            }
        }
    }

    @Test
    void persistentServerServesConcurrentRpingClients() throws Exception {
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        try (RpingServer server = RpingServer.bind(new InetSocketAddress(address, 0),
                new RpingSettings(RpingSettings.DEFAULT_SIZE, N, false, true), line -> { }).block(T)) {
            CompletableFuture<List<RpingResult>> served = server.serveAll(failures::add).take(2).collectList()
                    .toFuture();
            String port = Integer.toString(server.address().getPort());
            RpingProcess first = RpingProcess.start(tmp, "-c", "-a", address.getHostAddress(), "-p", port,
                    "-C", Integer.toString(N), "-V");
            RpingProcess second = RpingProcess.start(tmp, "-c", "-a", address.getHostAddress(), "-p", port,
                    "-C", Integer.toString(N), "-V");
            try {
                assertEquals(0, first.awaitExit(), first::describe);
                assertEquals(0, second.awaitExit(), second::describe);
                assertEquals(List.of(new RpingResult(N, N), new RpingResult(N, N)),
                        served.get(T.toSeconds(), TimeUnit.SECONDS));
                assertEquals(List.of(), failures);
            } finally {
                first.destroy();
                second.destroy();
            }
        }
    }

    @Test
    void ourClientAgainstOurServer() throws Exception {
        List<String> serverLines = Collections.synchronizedList(new ArrayList<>());
        List<String> clientLines = Collections.synchronizedList(new ArrayList<>());
        RpingSettings settings = new RpingSettings(PingData.MAX_SIZE, N, true, true);
        try (RpingServer server = RpingServer.bind(new InetSocketAddress(address, 0), settings, serverLines::add)
                .block(T)) {
            CompletableFuture<RpingResult> served = server.serveOne().toFuture();
            RpingResult result = RpingClient.run(server.address(), settings, clientLines::add).block(T);
            assertEquals(new RpingResult(N, N), result);
            assertEquals(new RpingResult(N, N), served.get(T.toSeconds(), TimeUnit.SECONDS));
            assertEquals(pingLines("ping data: ", PingData.MAX_SIZE), clientLines);
            assertEquals(pingLines("server ping data: ", PingData.MAX_SIZE), serverLines);
        }
    }

    @Test
    void serverRefusesAPingLargerThanItsSize() throws Exception {
        try (RpingServer server = RpingServer.bind(new InetSocketAddress(address, 0),
                new RpingSettings(64, N, false, true), line -> { }).block(T)) {
            CompletableFuture<RpingResult> served = server.serveOne().toFuture();
            Throwable client = assertThrows(RuntimeException.class, () -> RpingClient.run(server.address(),
                    new RpingSettings(1000, N, false, true), line -> { }).block(T));
            // The server hangs up on the oversized advertisement before any ping completed.
            assertInstanceOf(RpingException.class, Exceptions.unwrap(client), client::toString);
            assertTrue(client.getMessage().contains("after 0 of " + N + " pings"), client::toString);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> served.get(T.toSeconds(), TimeUnit.SECONDS));
            assertInstanceOf(RpingException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("1000-byte buffer"), e.getCause()::getMessage);
        }
    }

    /** A port no one listens on: one the RDMA CM itself picked and released. */
    private int freePort() {
        try (RpingServer probe = RpingServer.bind(new InetSocketAddress(address, 0),
                new RpingSettings(RpingSettings.DEFAULT_SIZE, 1, false, false), line -> { }).block(T)) {
            return probe.address().getPort();
        }
    }

    /** rdma-core's rping as a subprocess, its output in files (a pipe could fill up and stall it). */
    private record RpingProcess(Process process, Path out, Path err, List<String> command) {
        static RpingProcess start(Path dir, String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of("rping"));
            command.addAll(List.of(args));
            Path out = Files.createTempFile(dir, "rping", ".out");
            Path err = Files.createTempFile(dir, "rping", ".err");
            Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            return new RpingProcess(p, out, err, command);
        }

        /** Waits until the kernel lists rping's listening id, so a connect cannot race its rdma_listen. */
        void awaitListening(int port) throws IOException, InterruptedException {
            long deadline = System.nanoTime() + T.toNanos();
            String needle = ":" + port + " ";
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new AssertionError("rping exited before listening: " + describe());
                }
                Process show = new ProcessBuilder("rdma", "resource", "show", "cm_id").redirectErrorStream(true)
                        .start();
                String ids = new String(show.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!show.waitFor(30, TimeUnit.SECONDS)) {
                    show.destroyForcibly();
                    throw new AssertionError("rdma resource show cm_id hangs");
                }
                if (ids.lines().anyMatch(l -> l.contains("state LISTEN") && l.contains("comm rping")
                        && l.contains(needle))) {
                    return;
                }
                Thread.sleep(100);
            }
            throw new AssertionError("rping did not listen on port " + port + " within " + T + ": " + describe());
        }

        int awaitExit() throws InterruptedException {
            if (!process.waitFor(T.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("rping still running after " + T + ": " + describe());
            }
            return process.exitValue();
        }

        List<String> stdout() {
            return read(out).lines().toList();
        }

        String stderr() {
            return read(err);
        }

        String describe() {
            return command + "\n--- stdout\n" + read(out) + "--- stderr\n" + read(err);
        }

        private static String read(Path p) {
            try {
                return Files.readString(p, StandardCharsets.US_ASCII);
            } catch (IOException e) {
                return "(unreadable: " + e + ")";
            }
        }

        void destroy() throws InterruptedException {
            if (process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
