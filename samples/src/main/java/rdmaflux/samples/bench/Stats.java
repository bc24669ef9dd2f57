package rdmaflux.samples.bench;

import java.util.Arrays;
import java.util.List;

/** The statistics perftest reports, computed the same way so the two sides of a ratio mean the same thing. */
final class Stats {
    /** perftest leaves out the largest samples before taking the median ({@code LAT_MEASURE_TAIL}). */
    static final int LAT_MEASURE_TAIL = 2;

    private Stats() {
    }

    /**
     * The typical latency as ib_*_lat prints it ({@code t_typical}): per-iteration times are the gaps
     * between consecutive post timestamps, sorted, the largest {@link #LAT_MEASURE_TAIL} dropped, the
     * median of the rest, divided by {@code rttFactor} (2 for ping-pongs, 1 for reads).
     *
     * @param stamps {@code n + 1} nanosecond timestamps: the start of each iteration and the end
     * @param rttFactor 2 to report half a round trip
     * @return microseconds
     */
    static double typicalMicros(long[] stamps, int rttFactor) {
        int n = stamps.length - 1;
        long[] delta = new long[n];
        for (int i = 0; i < n; i++) {
            delta[i] = stamps[i + 1] - stamps[i];
        }
        Arrays.sort(delta);
        int cnt = Math.max(1, n - LAT_MEASURE_TAIL);
        double median = cnt % 2 == 0 ? (delta[cnt / 2 - 1] + delta[cnt / 2]) / 2.0 : delta[cnt / 2];
        return median / 1e3 / rttFactor;
    }

    /**
     * The rate of a side's fast mode: the median of the rates that reached at least half of its fastest.
     * Under qemu's round-robin of two virtual CPUs on one host thread, a stream whose two sides spin runs at
     * one of two rates, about five times apart, fixed for the whole stream: its client gets about half the
     * host thread (the spinning server the other half) or about a tenth. Which mode a stream falls in
     * depends on the emulator, not on the code, so a ratio of two sides' means would compare how many of
     * each side's streams fell in the slow mode.
     *
     * @param rates one side's per-stream rates
     * @return the median of the fast mode, or NaN for no rates
     */
    static double fastMode(List<Double> rates) {
        return median(fast(rates));
    }

    /** {@return the rates of {@code rates} below half of the fastest: those {@link #fastMode} leaves out} */
    static List<Double> slowMode(List<Double> rates) {
        double max = rates.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        return rates.stream().filter(r -> r < max / 2).toList();
    }

    private static List<Double> fast(List<Double> rates) {
        double max = rates.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        return rates.stream().filter(r -> r >= max / 2).toList();
    }

    /** {@return the median of {@code values}, the mean of the middle two for an even count; NaN for none} */
    static double median(List<Double> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        List<Double> v = values.stream().sorted().toList();
        int n = v.size();
        return n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
    }

    /** {@return the smallest and the largest of {@code values} as {@code lo-hi}, as the notes show a range} */
    static String range(List<Double> values) {
        double lo = values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
        double hi = values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        return Row.fmt(lo) + "-" + Row.fmt(hi);
    }

    /** {@return bytes per second as Gbit/s (10^9 bits), perftest's {@code --report_gbits} unit} */
    static double gbits(double bytesPerSecond) {
        return bytesPerSecond * 8 / 1e9;
    }
}
