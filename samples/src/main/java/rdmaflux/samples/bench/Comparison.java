package rdmaflux.samples.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Measures ours against a C tool for one row: both {@code repeat} times, alternating, each side's median.
 * Remembers whether any run of ours failed.
 */
final class Comparison {
    /**
     * One measurement of ours: the value, the heap bytes per message its threads allocated, and the
     * process CPU microseconds per message over the timed part (NaN if not measured).
     */
    record Measured(double value, double alloc, double cpu) {
        Measured(double value, double alloc) {
            this(value, alloc, Double.NaN);
        }
    }


    private final int repeat;
    private final Consumer<Row> progress;
    private boolean failed;

    /**
     * @param repeat runs of each side
     * @param progress prints a finished row
     */
    Comparison(int repeat, Consumer<Row> progress) {
        this.repeat = repeat;
        this.progress = progress;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * Measures ours and C {@code repeat} times, alternating, and reports each side's median, so a hiccup
     * of the (emulated) machine in one run does not decide a row. The note gives both sides' ranges.
     */
    Row compare(String metric, long size, String unit, String tool, Row.Target target,
                        Supplier<Measured> ours, Supplier<CTools.Outcome> c, String baseNote) {
        List<Double> mine = new ArrayList<>();
        List<Double> theirs = new ArrayList<>();
        List<Double> myCpu = new ArrayList<>();
        List<Double> theirCpu = new ArrayList<>();
        double alloc = Double.NaN;
        List<String> errors = new ArrayList<>();
        for (int r = 0; r < repeat; r++) {
            try {
                Measured m = ours.get();
                mine.add(m.value());
                alloc = Double.isNaN(alloc) ? m.alloc() : Math.max(alloc, m.alloc());
                if (!Double.isNaN(m.cpu())) {
                    myCpu.add(m.cpu());
                }
            } catch (RuntimeException e) {
                failed = true;
                errors.add("ours failed: " + e.getMessage());
            }
            CTools.Outcome o = c.get();
            if (o.ok()) {
                theirs.add(o.value());
                if (!Double.isNaN(o.cpuPerMessage())) {
                    theirCpu.add(o.cpuPerMessage());
                }
            } else {
                errors.add(o.error());
            }
        }
        String note = baseNote;
        if (repeat > 1 && !mine.isEmpty() && !theirs.isEmpty()) {
            note = (note.isEmpty() ? "" : note + "; ") + "median of " + repeat + ": ours " + Stats.range(mine) + ", C "
                    + Stats.range(theirs);
        }
        if (!errors.isEmpty()) {
            note = (note.isEmpty() ? "" : note + "; ") + String.join("; ", errors.stream().distinct().toList());
        }
        if (repeat > 1 && (!myCpu.isEmpty() || !theirCpu.isEmpty())) {
            note += "; CPU us/msg " + (myCpu.isEmpty() ? "" : "ours " + Stats.range(myCpu)) + (theirCpu.isEmpty() ? ""
                    : (myCpu.isEmpty() ? "" : ", ") + "C " + Stats.range(theirCpu));
        }
        Row row = new Row(metric, size, unit, Stats.median(mine), Stats.median(theirs), tool, target, alloc, note)
                .withCpu(Stats.median(myCpu), Stats.median(theirCpu));
        progress.accept(row);
        return row;
    }
}
