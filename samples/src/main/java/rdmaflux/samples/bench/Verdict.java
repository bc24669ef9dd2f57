package rdmaflux.samples.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.ToDoubleFunction;

/**
 * How a row with a target is judged: the ratio ours / baseline with a 95 % interval from a bootstrap over the
 * paired runs, and the outcome that interval allows. A single ratio of two medians of a few runs on a noisy
 * machine says which side of the bound that draw fell on, not which side the two programs are on; the
 * interval says how far the runs let the ratio move.
 *
 * <p>The bootstrap resamples pairs, not each side on its own: run {@code i} of ours and run {@code i} of the
 * baseline were taken back to back, so they share the machine's slow and fast periods, and keeping them
 * together keeps that. Runs in forks (JVMs of their own) are resampled in two stages, forks first, then the
 * pairs within each chosen fork, because runs in one JVM are more alike than runs in different ones. The
 * generator has a fixed seed: the same runs always give the same interval.
 *
 * <p>Threads: any; no state.
 */
final class Verdict {
    /** The bootstrap's seed: fixed, so a row's interval is a function of its runs. */
    static final long SEED = 39;
    /** Bootstrap resamples per interval. */
    static final int RESAMPLES = 4000;
    /**
     * The fewest pairs an interval is computed from. Below it the resamples of a median take only two or three
     * values, and the interval says more about the count than about the runs; such a row is inconclusive.
     */
    static final int MIN_PAIRS = 5;

    private Verdict() {
    }

    /** What a row's target comes to. */
    enum Outcome {
        /** The whole interval is on the target's side of the bound. */
        MET("met"),
        /** The whole interval is on the other side. */
        MISSED("MISSED"),
        /** The interval straddles the bound (or there were too few pairs for one): not met. */
        INCONCLUSIVE("inconclusive"),
        /** A side failed or is missing: not met. */
        FAILED("FAILED"),
        /** The row has no target. */
        NONE("-");

        private final String text;

        Outcome(String text) {
            this.text = text;
        }

        /** {@return how the table shows it} */
        String text() {
            return text;
        }

        /** {@return whether a row with this outcome has a target that did not hold or could not be judged} */
        boolean notMet() {
            return this == MISSED || this == INCONCLUSIVE || this == FAILED;
        }
    }

    /**
     * A 95 % interval of the ratio.
     *
     * @param lo its lower end, NaN when there is none
     * @param hi its upper end, NaN when there is none
     */
    record Interval(double lo, double hi) {
        /** No interval: too few pairs, or none. */
        static final Interval NONE = new Interval(Double.NaN, Double.NaN);

        /** {@return whether there is one} */
        boolean known() {
            return !Double.isNaN(lo) && !Double.isNaN(hi);
        }

    }

    /**
     * The 95 % percentile interval of {@code statistic(ours) / statistic(baseline)} over {@link #RESAMPLES}
     * resamples of the pairs, seeded with {@link #SEED}.
     *
     * @param ours ours per pair
     * @param baseline the baseline per pair, as many as {@code ours}
     * @param forks the fork (or any other cluster) of each pair, as many; {@code null}: every pair its own
     * @param statistic what each side is summed up by (a median; the stream rows' fast mode)
     * @return the interval, {@link Interval#NONE} for fewer than {@link #MIN_PAIRS} pairs or unequal sides
     */
    static Interval ratioInterval(List<Double> ours, List<Double> baseline, List<Integer> forks,
                                  ToDoubleFunction<List<Double>> statistic) {
        int n = ours.size();
        if (n < MIN_PAIRS || baseline.size() != n || forks != null && forks.size() != n) {
            return Interval.NONE;
        }
        Map<Integer, List<Integer>> byFork = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            byFork.computeIfAbsent(forks == null ? i : forks.get(i), k -> new ArrayList<>()).add(i);
        }
        List<List<Integer>> clusters = List.copyOf(byFork.values());
        // One cluster of all pairs resamples the pairs; n clusters of one resample them too: the same bootstrap.
        SplittableRandom random = new SplittableRandom(SEED);
        double[] ratios = new double[RESAMPLES];
        int kept = 0;
        List<Double> a = new ArrayList<>(n);
        List<Double> b = new ArrayList<>(n);
        for (int r = 0; r < RESAMPLES; r++) {
            a.clear();
            b.clear();
            for (int c = 0; c < clusters.size(); c++) {
                List<Integer> cluster = clusters.get(random.nextInt(clusters.size()));
                for (int k = 0; k < cluster.size(); k++) {
                    int i = cluster.get(random.nextInt(cluster.size()));
                    a.add(ours.get(i));
                    b.add(baseline.get(i));
                }
            }
            double ratio = statistic.applyAsDouble(a) / statistic.applyAsDouble(b);
            if (Double.isFinite(ratio)) {
                ratios[kept++] = ratio;
            }
        }
        // A baseline of 0 in most resamples leaves no ratio to speak of.
        if (kept < RESAMPLES / 2) {
            return Interval.NONE;
        }
        double[] sorted = Arrays.copyOf(ratios, kept);
        Arrays.sort(sorted);
        return new Interval(quantile(sorted, 0.025), quantile(sorted, 0.975));
    }

    /** {@return the {@code q} quantile of sorted values, linear between the two nearest} */
    static double quantile(double[] sorted, double q) {
        double pos = q * (sorted.length - 1);
        int i = (int) Math.floor(pos);
        int j = Math.min(i + 1, sorted.length - 1);
        return sorted[i] + (pos - i) * (sorted[j] - sorted[i]);
    }

    /**
     * The outcome of a ratio target.
     *
     * @param atMost whether ours / baseline must be at most the bound (latency), else at least (throughput)
     * @param bound the bound on ours / baseline
     * @param interval the ratio's interval
     * @param failed whether a run of either side failed, or a side has no value
     * @return {@link Outcome#FAILED} for a failed side, whatever the rest; {@link Outcome#INCONCLUSIVE} without
     *         an interval or when it contains the bound; else met or missed
     */
    static Outcome judge(boolean atMost, double bound, Interval interval, boolean failed) {
        if (failed) {
            return Outcome.FAILED;
        }
        if (!interval.known()) {
            return Outcome.INCONCLUSIVE;
        }
        if (atMost ? interval.hi() <= bound : interval.lo() >= bound) {
            return Outcome.MET;
        }
        if (atMost ? interval.lo() > bound : interval.hi() < bound) {
            return Outcome.MISSED;
        }
        return Outcome.INCONCLUSIVE;
    }
}
