package rdmaflux.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Counts of kernel RDMA objects as {@code rdma resource show} prints them (pd, cq, qp, cm_id, mr), so
 * leak tests compare the kernel's own view before and after.
 */
public final class RdmaResources {
    private static final Pattern COUNT = Pattern.compile("\\b(pd|cq|qp|cm_id|mr|ctx|srq) (\\d+)");

    private RdmaResources() {
    }

    private static final Pattern MR_LENGTH = Pattern.compile("\"mrlen\":(\\d+)");

    /**
     * The memory registered right now in regions of at least {@code atLeast} bytes, from the kernel's
     * own list ({@code rdma -j resource show mr}): tests measure buffering from the MRs that exist.
     *
     * @param atLeast the smallest region counted
     * @return the bytes of those regions, over all processes and devices
     */
    public static long registeredBytes(long atLeast) {
        String out = run("rdma", "-j", "resource", "show", "mr");
        long sum = 0;
        Matcher m = MR_LENGTH.matcher(out);
        while (m.find()) {
            long len = Long.parseLong(m.group(1));
            if (len >= atLeast) {
                sum += len;
            }
        }
        return sum;
    }

    /**
     * How many memory regions of exactly {@code length} bytes exist right now, from the kernel's own list
     * ({@code rdma -j resource show mr}): a region registered for one buffer has that buffer's length.
     *
     * @param length the length
     * @return how many regions have it, over all processes and devices
     */
    public static int regionsOfLength(long length) {
        Matcher m = MR_LENGTH.matcher(run("rdma", "-j", "resource", "show", "mr"));
        int n = 0;
        while (m.find()) {
            if (Long.parseLong(m.group(1)) == length) {
                n++;
            }
        }
        return n;
    }

    /**
     * The memory one process has registered right now, from the kernel's own list
     * ({@code rdma -j resource show mr}). The kernel names each region's creator by its task, which for
     * a thread other than the main one is the thread's id, not the process's: regions are matched against
     * every thread of the process ({@code /proc/<pid>/task}), so one made by a thread that ended since is
     * missed.
     *
     * @param pid the process
     * @return the bytes of its regions, over all devices
     */
    public static long registeredBytesOf(long pid) {
        java.util.Set<String> tasks = new java.util.HashSet<>();
        try (var dir = java.nio.file.Files.list(java.nio.file.Path.of("/proc", Long.toString(pid), "task"))) {
            dir.forEach(t -> tasks.add(t.getFileName().toString()));
        } catch (IOException e) {
            throw new AssertionError("cannot list the threads of process " + pid, e);
        }
        String out = run("rdma", "-j", "resource", "show", "mr");
        long sum = 0;
        Matcher entry = Pattern.compile("\\{[^{}]*\\}").matcher(out);
        Pattern task = Pattern.compile("\"pid\":(\\d+)");
        while (entry.find()) {
            String e = entry.group();
            Matcher t = task.matcher(e);
            Matcher len = MR_LENGTH.matcher(e);
            if (t.find() && tasks.contains(t.group(1)) && len.find()) {
                sum += Long.parseLong(len.group(1));
            }
        }
        if (sum == 0 && out.contains("mrlen")) {
            throw new AssertionError("no region of the kernel's list belongs to a thread of process " + pid + " ("
                    + tasks.size() + " threads); the list starts: " + out.substring(0, Math.min(out.length(), 600)));
        }
        return sum;
    }

    private static String run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError(String.join(" ", command) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new AssertionError("cannot run 'rdma' (iproute2)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * Runs {@code rdma resource show} and sums the counts over devices.
     *
     * @return resource name → count
     */
    public static Map<String, Integer> snapshot() {
        String out = run("rdma", "resource", "show");
        Map<String, Integer> counts = new TreeMap<>();
        Matcher m = COUNT.matcher(out);
        while (m.find()) {
            counts.merge(m.group(1), Integer.parseInt(m.group(2)), Integer::sum);
        }
        if (!counts.containsKey("qp")) {
            throw new AssertionError("no counts in rdma resource show output: " + out);
        }
        return counts;
    }
}
