package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The reactive large-message rows ({@link ReactiveLarge}) against {@code ib_read_bw}, and the same streams
 * into memory the bench supplies.
 */
final class LargeRows {
    /** The metric of the reactive large-message rows. */
    static final String METRIC = "reactive large-message bandwidth";
    /** Their target: at least 0.9 × {@code ib_read_bw}. */
    static final Row.Target TARGET = Row.Target.ratioAtLeast(0.9);
    private final InetAddress ip;
    private final boolean quick;
    private final int repeat;
    private final Duration timeout;
    private final Comparison comparison;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> say;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param quick a short run
     * @param repeat runs of each side
     * @param timeout the longest wait for any step
     * @param comparison measures ours against ib_read_bw
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until the JIT has gone quiet
     * @param say prints a line
     */
    LargeRows(InetAddress ip, boolean quick, int repeat, Duration timeout, Comparison comparison,
              Consumer<Row> progress, Runnable awaitJitQuiet, Consumer<String> say) {
        this.ip = ip;
        this.quick = quick;
        this.repeat = repeat;
        this.timeout = timeout;
        this.comparison = comparison;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.say = say;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * Reactive throughput of messages larger than the receive buffers (sent by rendezvous: the receiver
     * RDMA-READs them) against {@code ib_read_bw} at the same sizes and counts; target as
     * {@link #TARGET}; the allocation column is all threads' heap bytes per message. Each timed stream starts
     * cold on both sides, as {@code ib_read_bw} starts a new process for each ({@link Comparison}).
     */
    List<Row> rows(CTools c) {
        int[] sizes = quick ? new int[] {64 << 10, 1 << 20}
                : new int[] {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
        long budget = (quick ? 4L : 32L) << 20;
        List<Row> rows = new ArrayList<>();
        ReactiveLarge pair;
        try {
            pair = ReactiveLarge.open(new InetSocketAddress(ip, 0), sizes[sizes.length - 1], timeout, false);
            int warm = quick ? 64 : 1000;
            say.accept("bench: warming up the JIT on the reactive large-message stream (" + warm + " x 64 KiB)");
            pair.stream(64 << 10, warm);
        } catch (RuntimeException e) {
            failed = true;
            for (int size : sizes) {
                Row row = new Row(METRIC, size, "Gbit/s", Double.NaN, Double.NaN, "ib_read_bw",
                        TARGET, Double.NaN, "ours failed: " + e.getMessage());
                progress.accept(row);
                rows.add(row);
            }
            return rows;
        }
        try (pair) {
            for (int size : sizes) {
                // perftest takes 5 iterations at least.
                int n = (int) Math.max(5, Math.min(512, budget / size));
                rows.add(comparison.compare(METRIC, size, "Gbit/s", "ib_read_bw",
                        TARGET, () -> {
                    ReactiveLarge.Run r = pair.stream(size, n);
                    return new Comparison.Measured(Stats.gbits(r.bytesPerSecond()), r.allocPerMessage());
                }, () -> {
                    CTools.Outcome o = c.bandwidth("ib_read_bw", size, n, false);
                    return o.ok() ? new CTools.Outcome(Stats.gbits(o.value()), null) : o;
                }, n + " messages; send(RegisteredBuffer), " + ReactiveLarge.IN_FLIGHT
                        + " subscribed at a time, default options; alloc = all threads"));
            }
        }
        rows.addAll(applicationMemoryRows(sizes, budget, rows));
        return rows;
    }

    /**
     * The same streams with the receiver reading into memory the bench supplies and reuses
     * ({@code largeMessageMemory}), against the C values of {@code compared}: what allocating a region
     * per message costs (informational, ours only).
     */
    private List<Row> applicationMemoryRows(int[] sizes, long budget, List<Row> compared) {
        String metric = METRIC + ", application memory";
        List<Row> rows = new ArrayList<>();
        try (ReactiveLarge pair = ReactiveLarge.open(new InetSocketAddress(ip, 0), sizes[sizes.length - 1], timeout,
                true)) {
            pair.stream(64 << 10, quick ? 64 : 1000);
            for (int i = 0; i < sizes.length; i++) {
                int size = sizes[i];
                int n = (int) Math.max(5, Math.min(512, budget / size));
                List<Double> mine = new ArrayList<>();
                double alloc = Double.NaN;
                awaitJitQuiet.run();
                for (int r = 0; r < repeat; r++) {
                    pair.stream(size, Math.max(2, n / 8));
                    ReactiveLarge.Run run = pair.stream(size, n);
                    mine.add(Stats.gbits(run.bytesPerSecond()));
                    alloc = Double.isNaN(alloc) ? run.allocPerMessage() : Math.max(alloc, run.allocPerMessage());
                }
                String note = n + " messages; as above, received into slices of one segment reused round-robin "
                        + "(ConnectionOptions.largeMessageMemory); alloc = all threads"
                        + (repeat > 1 ? "; median of " + repeat + ": " + Stats.range(mine) : "");
                Row row = new Row(metric, size, "Gbit/s", Stats.median(mine), compared.get(i).c(), "ib_read_bw",
                        Row.Target.NONE, alloc, note);
                progress.accept(row);
                rows.add(row);
            }
        } catch (RuntimeException e) {
            failed = true;
            Row row = new Row(metric, 0, "Gbit/s", Double.NaN, Double.NaN, "ib_read_bw", Row.Target.NONE, Double.NaN,
                    "ours failed: " + e.getMessage());
            progress.accept(row);
            rows.add(row);
        }
        return rows;
    }
}
