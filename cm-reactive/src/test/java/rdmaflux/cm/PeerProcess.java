package rdmaflux.cm;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import rdmaflux.testing.RdmaTestEnv;

/**
 * Test fixture: a {@link PeerMain} server in a second JVM (same java, same class path), so a test can
 * talk to a peer in another process and kill that process.
 */
final class PeerProcess implements AutoCloseable {
    /** A JVM starts slowly under the sandbox's emulation (~10 s before main). */
    private static final Duration STARTUP = RdmaTestEnv.scaled(Duration.ofSeconds(120));

    private final Process process;
    private final int port;

    private PeerProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /**
     * Starts the peer and waits until it listens.
     *
     * @param mode a {@link PeerMain} mode: {@code echo}, {@code stream} or {@code storm}
     * @return the running peer
     */
    static PeerProcess start(String mode) {
        // Direct memory beyond the heap's 256 MiB: ManyConnectionsIT's 1,000 server sides need ~0.55 GiB.
        return start(mode, "-XX:MaxDirectMemorySize=1g");
    }

    /**
     * Starts the peer with JVM options of the test's choosing and waits until it listens.
     *
     * @param mode a {@link PeerMain} mode
     * @param jvmOptions e.g. a direct memory limit
     * @return the running peer
     */
    static PeerProcess start(String mode, String... jvmOptions) {
        List<String> cmd = javaCommand(PeerMain.class, List.of(jvmOptions), mode);
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the peer JVM", e);
        }
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<Integer> port = CompletableFuture.supplyAsync(() -> {
            try {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith("PORT ")) {
                        return Integer.parseInt(line.substring(5).trim());
                    }
                }
                throw new IllegalStateException("the peer exited before listening");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        try {
            return new PeerProcess(p, port.get(STARTUP.toSeconds(), TimeUnit.SECONDS));
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            p.destroyForcibly();
            throw new AssertionError("the peer JVM did not start listening within " + STARTUP, e);
        }
    }

    /**
     * The command line of a test JVM like this one (same java, class path, compiler and leak detection),
     * for fixtures that run a main class of their own in another process.
     *
     * @param main the main class, from the test class path
     * @param jvmOptions options after the common ones, e.g. a direct memory limit
     * @param args the main class's arguments
     * @return the command
     */
    static List<String> javaCommand(Class<?> main, List<String> jvmOptions, String... args) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new java.util.ArrayList<>(List.of(java, "-ea", "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
                // The peer tracks its messages as this JVM does; its reports go to its output.
                "-D" + RdmaLeakDetection.LEVEL_PROPERTY + "=" + RdmaLeakDetection.level().name().toLowerCase(Locale.ROOT)));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** @return where the peer listens */
    InetSocketAddress address() {
        return new InetSocketAddress(RdmaTestEnv.address(), port);
    }

    /** @return whether the peer's JVM is still running */
    boolean isAlive() {
        return process.isAlive();
    }

    /** @return the peer's process id */
    long pid() {
        return process.pid();
    }

    /** Kills the peer (SIGKILL: no shutdown hooks, no orderly close) and waits until it is gone. */
    void kill() {
        process.destroyForcibly();
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                throw new AssertionError("the peer JVM did not die");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
    }
}
