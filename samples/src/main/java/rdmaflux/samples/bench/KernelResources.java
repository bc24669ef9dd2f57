package rdmaflux.samples.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The kernel's own view of RDMA objects, from iproute2's {@code rdma resource show}: what the scale row
 * ({@link ScaleRows}) reports as pinned memory and checks against its baseline. The kernel's list is the
 * measure both of what a process registered and of what it left behind, whatever the library thinks it holds.
 */
final class KernelResources {
    private static final Pattern COUNT = Pattern.compile("\\b(pd|cq|qp|cm_id|mr|srq) (\\d+)");
    private static final Pattern REGION = Pattern.compile("\\{[^{}]*}");
    private static final Pattern LENGTH = Pattern.compile("\"mrlen\":(\\d+)");
    private static final Pattern TASK = Pattern.compile("\"pid\":(\\d+)");

    private KernelResources() {
    }

    /**
     * {@return the bytes of the memory regions that process {@code pid} registered, over all devices}
     * The kernel names a region's creator by its task, which for a thread other than the main one is the
     * thread's id: regions are matched against every thread of the process now alive.
     *
     * @param pid the process
     */
    static long registeredBytesOf(long pid) {
        Set<String> tasks = new HashSet<>();
        try (Stream<Path> dir = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            dir.forEach(t -> tasks.add(t.getFileName().toString()));
        } catch (IOException e) {
            throw new IllegalStateException("cannot list the threads of process " + pid + ": " + e, e);
        }
        return registeredBytes(run("rdma", "-j", "resource", "show", "mr"), tasks);
    }

    /**
     * {@return the bytes of the regions in {@code json} ({@code rdma -j resource show mr}) created by one of
     * {@code tasks}}
     */
    static long registeredBytes(String json, Set<String> tasks) {
        long sum = 0;
        Matcher region = REGION.matcher(json);
        while (region.find()) {
            Matcher task = TASK.matcher(region.group());
            Matcher length = LENGTH.matcher(region.group());
            if (task.find() && tasks.contains(task.group(1)) && length.find()) {
                sum += Long.parseLong(length.group(1));
            }
        }
        return sum;
    }

    /** {@return the kernel's count of each kind of RDMA object, summed over devices} */
    static Map<String, Integer> counts() {
        return counts(run("rdma", "resource", "show"));
    }

    /** {@return the counts in {@code text} ({@code rdma resource show}), summed over its devices} */
    static Map<String, Integer> counts(String text) {
        Map<String, Integer> counts = new TreeMap<>();
        Matcher m = COUNT.matcher(text);
        while (m.find()) {
            counts.merge(m.group(1), Integer.parseInt(m.group(2)), Integer::sum);
        }
        return counts;
    }

    private static String run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command[0] + " (iproute2): " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
