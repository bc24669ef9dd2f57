package rdmaflux.samples.bench;

import java.util.Arrays;

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

    /** {@return bytes per second as Gbit/s (10^9 bits), perftest's {@code --report_gbits} unit} */
    static double gbits(double bytesPerSecond) {
        return bytesPerSecond * 8 / 1e9;
    }
}
