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
