package rdmaflux.testing;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * A fixed amount of JVM work that scripts/lib/it-lane times before an integration-test lane starts,
 * to tell how fast this machine runs the sandbox against the reference timing in
 * scripts/it-durations.tsv, and to scale the lane's time limit with it.
 *
 * <p>The work is shaped like the suite's: a JVM start with class loading, code the JIT compiles
 * (the lanes run C1 only), allocation, collections and hashing. It does no I/O and no RDMA, so the
 * emulated CPU's speed is all it measures. It prints a checksum so no step can be optimized away.
 */
public final class Calibrate {
    private Calibrate() {
    }

    /**
     * Runs the work once.
     *
     * @param args ignored
     * @throws NoSuchAlgorithmException never: every JDK has SHA-256
     */
    public static void main(String[] args) throws NoSuchAlgorithmException {
        long checksum = 0;
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        byte[] block = new byte[64 * 1024];
        for (int i = 0; i < 400; i++) {
            block[i] = (byte) i;
            checksum += sha.digest(block)[0];
        }
        for (int round = 0; round < 15; round++) {
            Map<String, List<Integer>> groups = new HashMap<>();
            for (int i = 0; i < 60_000; i++) {
                groups.computeIfAbsent("k" + (i % 997), k -> new ArrayList<>()).add(i);
            }
            checksum += groups.values().stream().mapToLong(List::size).sum();
            checksum += IntStream.range(0, 200_000).filter(i -> i % 3 == 0).mapToLong(i -> (long) i * i % 7919).sum();
            checksum += String.join(",", groups.keySet()).getBytes(StandardCharsets.UTF_8).length;
        }
        System.out.println("calibration checksum " + checksum);
    }
}
