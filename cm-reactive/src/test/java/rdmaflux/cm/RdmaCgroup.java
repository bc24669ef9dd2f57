package rdmaflux.cm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Test fixture: this JVM in a cgroup of its own whose rdma controller limits the verbs objects it makes
 * ({@code rdma.max}'s {@code hca_object}), the kernel's way to cap a process's queue pairs, CQs, regions and
 * domains on a device. The kernel charges an object to the cgroup its maker is in at that moment, so what the
 * JVM made before entering stays outside the limit and the count starts at zero. Closing moves the JVM back
 * to its cgroup. Needs root and a kernel with {@code CONFIG_CGROUP_RDMA}; mounts the cgroup v2 hierarchy on
 * {@code /sys/fs/cgroup} where nothing is mounted there (the sandbox VM).
 */
final class RdmaCgroup implements AutoCloseable {
    private static final Path ROOT = Path.of("/sys/fs/cgroup");

    private final Path dir;
    private final Path home;
    private final String device;

    private RdmaCgroup(Path dir, Path home, String device) {
        this.dir = dir;
        this.home = home;
        this.device = device;
    }

    /**
     * Moves this JVM into a new cgroup with no limit yet.
     *
     * @param name the cgroup's name under the hierarchy's root
     * @param device the RDMA device the limits are for
     * @return the cgroup
     * @throws AssertionError when the kernel has no rdma controller or this process may not use it
     */
    static RdmaCgroup enter(String name, String device) throws IOException, InterruptedException {
        if (!Files.exists(ROOT.resolve("cgroup.controllers"))) {
            Process mount = new ProcessBuilder("mount", "-t", "cgroup2", "none", ROOT.toString())
                    .redirectErrorStream(true).start();
            String out = new String(mount.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!mount.waitFor(60, TimeUnit.SECONDS) || mount.exitValue() != 0) {
                throw new AssertionError("cannot mount the cgroup v2 hierarchy on " + ROOT + ": " + out);
            }
        }
        String controllers = Files.readString(ROOT.resolve("cgroup.controllers"));
        if (!(" " + controllers.trim() + " ").contains(" rdma ")) {
            throw new AssertionError("the kernel has no rdma cgroup controller (CONFIG_CGROUP_RDMA): " + controllers);
        }
        Files.writeString(ROOT.resolve("cgroup.subtree_control"), "+rdma");
        Path home = ROOT;
        for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"))) {
            if (line.startsWith("0::")) {
                home = ROOT.resolve(line.substring(3).replaceFirst("^/+", ""));
            }
        }
        Path dir = ROOT.resolve(name);
        if (!Files.isDirectory(dir)) {
            Files.createDirectory(dir);
        }
        RdmaCgroup cg = new RdmaCgroup(dir, home, device);
        cg.limitObjects("max");
        join(dir);
        return cg;
    }

    /**
     * Sets the cgroup's limit on the device's objects.
     *
     * @param max a count, or {@code max} for none
     */
    void limitObjects(String max) {
        write(dir.resolve("rdma.max"), device + " hca_object=" + max);
    }

    /** {@return the objects charged to the cgroup now} */
    int objects() {
        try {
            for (String line : Files.readAllLines(dir.resolve("rdma.current"))) {
                String[] f = line.trim().split("\\s+");
                if (f[0].equals(device)) {
                    for (String kv : f) {
                        if (kv.startsWith("hca_object=")) {
                            return Integer.parseInt(kv.substring("hca_object=".length()));
                        }
                    }
                }
            }
            return 0; // the device has no line until something is charged
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@return the cgroup's directory} */
    Path dir() {
        return dir;
    }

    /** Lifts the limit and moves this JVM back to its cgroup; the new cgroup goes once its objects are freed. */
    @Override
    public void close() {
        limitObjects("max");
        join(home);
        try {
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // Still charged for objects not freed yet: an empty cgroup left behind harms nothing.
        }
    }

    private static void join(Path cgroup) {
        write(cgroup.resolve("cgroup.procs"), Long.toString(ProcessHandle.current().pid()));
    }

    private static void write(Path file, String line) {
        try {
            Files.writeString(file, line);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write '" + line + "' to " + file, e);
        }
    }
}
