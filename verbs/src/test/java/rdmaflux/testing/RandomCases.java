package rdmaflux.testing;

import java.util.Random;
import java.util.function.Consumer;

/**
 * Runs a randomized check many times, each case from its own seed, so a failure names the one seed
 * that reproduces it. Seeds are fixed, so every run tries the same cases; set the system property
 * {@code rdmaflux.random.seed} to explore others.
 */
public final class RandomCases {
    private RandomCases() {
    }

    /**
     * Runs {@code check} once per case.
     *
     * @param cases how many cases
     * @param check the check, given a generator seeded for that case
     */
    public static void run(int cases, Consumer<Random> check) {
        long base = Long.getLong("rdmaflux.random.seed", 0x5eedcafeL);
        for (int i = 0; i < cases; i++) {
            long seed = base + i;
            try {
                check.accept(new Random(seed));
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("case " + i + " failed; reproduce with -Drdmaflux.random.seed=" + seed
                        + " (first case): " + e.getMessage(), e);
            }
        }
    }

    /**
     * Random bytes of a random length.
     *
     * @param r   the generator
     * @param max the longest array
     * @return bytes, 0 to {@code max} of them
     */
    public static byte[] bytes(Random r, int max) {
        byte[] b = new byte[r.nextInt(max + 1)];
        r.nextBytes(b);
        return b;
    }

    /**
     * An int, with the edge values far more often than uniform sampling would give them.
     *
     * @param r the generator
     * @return an int
     */
    public static int anyInt(Random r) {
        return switch (r.nextInt(8)) {
            case 0 -> Integer.MIN_VALUE;
            case 1 -> Integer.MAX_VALUE;
            case 2 -> r.nextInt(3) - 1;
            case 3 -> 0xFFFF + r.nextInt(3) - 1;
            default -> r.nextInt();
        };
    }
}
