package rdmaflux.samples.bench;

import java.util.concurrent.atomic.LongAdder;

import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.Step;

/**
 * Sums each side's step durations ({@link RdmaRecorder#stepDuration}: wall time from entering a step to
 * leaving it, queueing on the CM loop included), for the run's profile line.
 */
final class StepTotals implements RdmaRecorder {
    private final LongAdder[] nanos = new LongAdder[Step.values().length];
    private final LongAdder[] counts = new LongAdder[Step.values().length];

    StepTotals() {
        for (int i = 0; i < nanos.length; i++) {
            nanos[i] = new LongAdder();
            counts[i] = new LongAdder();
        }
    }

    @Override
    public void stepDuration(Step step, long n) {
        nanos[step.ordinal()].add(n);
        counts[step.ordinal()].increment();
    }

    /** Starts the totals again from zero. */
    void reset() {
        for (int i = 0; i < nanos.length; i++) {
            nanos[i].reset();
            counts[i].reset();
        }
    }

    String describe() {
        StringBuilder b = new StringBuilder();
        for (Step s : Step.values()) {
            long c = counts[s.ordinal()].sum();
            if (c > 0) {
                b.append(b.isEmpty() ? "" : ", ").append(s.name().toLowerCase(java.util.Locale.ROOT)).append(' ')
                        .append(String.format(java.util.Locale.ROOT, "%.1f ms avg", nanos[s.ordinal()].sum() / 1e6 / c));
            }
        }
        return b.toString();
    }
}
