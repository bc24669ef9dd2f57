package rdmaflux.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Test fixture for the cross-host integration tests ({@code *HostsIT}), which run on host 1 of
 * {@code scripts/sandbox/hosts --agents}: the other hosts' addresses, processes started on them, and
 * faults (cut or restore a host's wire, crash a host), all through the directory the VMs share with the
 * script ({@code RDMAFLUX_HOSTS_DIR}). Outside such a run every method fails the test: a cross-host test
 * that cannot cross hosts must not pass or skip.
 *
 * <p>Static and stateless apart from a request counter; safe from any thread.
 */
public final class SandboxHosts {
    private static final AtomicLong IDS = new AtomicLong();
    /** Hosts crashed by {@link #kill}: their processes can no longer be waited for. */
    private static final java.util.Set<Integer> CRASHED = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** The script polls every 0.1 s; qemu answers at once. Generous for a loaded 2-core machine. */
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

    private SandboxHosts() {
    }

    /** @return the number of hosts on the wire (2 or more) */
    public static int count() {
        String n = System.getenv("RDMAFLUX_HOSTS");
        if (n == null || System.getenv("RDMAFLUX_HOSTS_DIR") == null) {
            throw new AssertionError("not in a multi-host run: run cross-host tests with "
                    + "RDMAFLUX_IT_HOSTS=3 scripts/it (scripts/sandbox/hosts --agents)");
        }
        return Integer.parseInt(n.trim());
    }

    /**
     * Fails the test unless there are at least {@code n} hosts.
     *
     * @param n hosts the test needs
     */
    public static void require(int n) {
        if (count() < n) {
            throw new AssertionError("this test needs " + n + " hosts, the run has " + count()
                    + " (RDMAFLUX_IT_HOSTS)");
        }
    }

    /** @return the number of the host this JVM runs on (1 for the tests) */
    public static int self() {
        count();
        return Integer.parseInt(System.getenv("RDMAFLUX_SANDBOX_HOST").trim());
    }

    /**
     * @param host a host number, 1..{@link #count()}
     * @return that host's RDMA (eth0) address
     */
    public static InetAddress address(int host) {
        String[] all = System.getenv().getOrDefault("RDMAFLUX_HOSTS_ADDRS", "").trim().split("\\s+");
        checkHost(host);
        try {
            return InetAddress.getByName(all[host - 1]);
        } catch (UnknownHostException | ArrayIndexOutOfBoundsException e) {
            throw new AssertionError("bad RDMAFLUX_HOSTS_ADDRS for host " + host, e);
        }
    }

    /**
     * Starts a process on another host (by its agent).
     *
     * @param host the host, 2..{@link #count()}
     * @param argv the command and its arguments (no newlines)
     * @return the started process
     */
    public static RemoteProcess start(int host, List<String> argv) {
        checkHost(host);
        if (host == self()) {
            throw new IllegalArgumentException("host " + host + " is this host; start local processes directly");
        }
        Path hostDir = dir().resolve("jobs").resolve("h" + host);
        String id = "j" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        Path job = hostDir.resolve(id);
        try {
            Files.createDirectories(job);
            for (String a : argv) {
                if (a.indexOf('\n') >= 0) {
                    throw new IllegalArgumentException("an argument contains a newline: " + a);
                }
            }
            writeAtomically(job.resolve("argv"), String.join("\n", argv) + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot hand the job to host " + host, e);
        }
        return new RemoteProcess(host, job);
    }

    /**
     * Starts a Java main class on another host with this JVM's java, class path, speed factor and the
     * sandbox's JIT settings.
     *
     * @param host the host
     * @param mainClass the class whose {@code main} to run
     * @param args its arguments
     * @return the started process
     */
    public static RemoteProcess startJava(int host, Class<?> mainClass, String... args) {
        List<String> argv = new ArrayList<>();
        String speed = System.getenv("RDMAFLUX_IT_SPEED");
        if (speed != null) {
            // The peer's bounds on emulated work stretch as this JVM's do (RdmaTestEnv.scaled).
            argv.addAll(List.of("env", "RDMAFLUX_IT_SPEED=" + speed));
        }
        argv.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-ea", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), mainClass.getName()));
        argv.addAll(List.of(args));
        return start(host, argv);
    }

    /**
     * Cuts or restores a host's wire (qemu's {@code set_link}): its NIC loses carrier and no frame passes.
     *
     * @param host the host
     * @param up {@code false} to cut, {@code true} to restore
     */
    public static void link(int host, boolean up) {
        request("link " + host + (up ? " on" : " off"));
    }

    /**
     * Crashes a host: its VM stops at once, with no shutdown and no goodbye on the wire.
     *
     * @param host the host (not this one)
     */
    public static void kill(int host) {
        if (host == self()) {
            throw new IllegalArgumentException("a test cannot crash its own host");
        }
        request("kill " + host);
        CRASHED.add(host);
    }

    /**
     * Starts a crashed host again (a fresh VM: its host restarted) and waits until its agent serves
     * {@link #start} requests.
     *
     * @param host a host {@link #kill} crashed
     * @param within how long booting may take (the VM, then its agent)
     */
    public static void boot(int host, Duration within) {
        if (!CRASHED.contains(host)) {
            throw new IllegalArgumentException("host " + host + " was not crashed by kill()");
        }
        request("boot " + host);
        CRASHED.remove(host);
        Path ready = dir().resolve("jobs").resolve("h" + host).resolve(".ready");
        long deadline = System.nanoTime() + within.toNanos();
        try {
            while (!Files.exists(ready)) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("host " + host + " did not come back within " + within);
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /**
     * @param host a host number
     * @return whether {@link #kill} crashed it
     */
    public static boolean crashed(int host) {
        return CRASHED.contains(host);
    }

    private static void request(String line) {
        Path requests = dir().resolve("requests");
        String name = "r" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        Path done = requests.resolve(name + ".done");
        try {
            writeAtomically(requests.resolve(name + ".req"), line + "\n");
            long deadline = System.nanoTime() + REQUEST_TIMEOUT.toNanos();
            while (!Files.exists(done)) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("scripts/sandbox/hosts did not answer '" + line + "' within "
                            + REQUEST_TIMEOUT);
                }
                Thread.sleep(50);
            }
            String answer = Files.readString(done, StandardCharsets.UTF_8).trim();
            Files.deleteIfExists(done);
            if (!answer.equals("ok")) {
                throw new AssertionError("'" + line + "' failed: " + answer);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("request '" + line + "' failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    static void writeAtomically(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }

    private static void checkHost(int host) {
        if (host < 1 || host > count()) {
            throw new IllegalArgumentException("no host " + host + " (1.." + count() + ")");
        }
    }

    private static Path dir() {
        count();
        return Path.of(System.getenv("RDMAFLUX_HOSTS_DIR"));
    }
}
