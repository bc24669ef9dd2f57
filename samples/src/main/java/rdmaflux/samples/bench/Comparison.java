package rdmaflux.samples.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The method every row with a target goes through: its sides (ours first, the baseline second, any further
 * ones for the notes) measured by one and the same code, so no rule can favour one of them.
 *
 * <ul>
 *   <li><b>Alternation</b>: round after round, each side once, in the order given (A, B, A, B, ...); run
 *       {@code i} of each side is a pair, taken back to back.</li>
 *   <li><b>Warm-up</b>: every timed run of every side follows the same number of untimed units of its own
 *       work ({@link Rules#warm}), 0 (a cold start) whenever a side cannot be warmed, as a C tool that starts
 *       a new process for each run cannot.</li>
 *   <li><b>Settling</b>: the same wait ({@link Rules#beforeEachRun}, the wait for an idle JIT) before every
 *       timed run of every side.</li>
 *   <li><b>No re-measuring</b>: every run counts, whichever side it measured and whatever the JIT did during
 *       it; a run that fails is counted as failed and the row is {@link Verdict.Outcome#FAILED}.</li>
 *   <li><b>Restarts</b>: a run that measured nothing ({@link NothingMeasured}: its connection was refused
 *       before its timed part began, or its tool's clock gave no time) is started again, at most
 *       {@link #MAX_RESTARTS} times, whichever side it is; the row's note counts each side's restarts.</li>
 *   <li><b>Forks</b>: a row measured in several JVMs ({@link #forks}) measures all its sides in each, with
 *       these rules, and keeps each pair's fork for the interval.</li>
 * </ul>
 * The row shows each side's statistic (the median; the stream rows' fast mode), the ratio, its 95 % interval
 * ({@link Verdict}) and the outcome.
 */
final class Comparison {
    /**
     * One measurement: the value, the heap bytes per message the threads allocated, and the process CPU
     * microseconds per message over the timed part (NaN if not measured).
     */
    record Measured(double value, double alloc, double cpu) {
        Measured(double value, double alloc) {
            this(value, alloc, Double.NaN);
        }
    }

    /** How many times one timed run is started again after a {@link NothingMeasured}, on every side alike. */
    static final int MAX_RESTARTS = 2;

    /**
     * Thrown by a side's run that measured nothing: its connection was refused before its timed part began, or
     * the tool's clock gave no time ({@code inf}). Starting it again re-measures nothing.
     */
    static final class NothingMeasured extends RuntimeException {
        /** @param message what failed */
        NothingMeasured(String message) {
            super(message);
        }
    }

    /**
     * One side of a comparison.
     *
     * @param name what it is, for the notes
     * @param canWarm whether it can do untimed work before a timed run (a C tool, a new process each run, cannot)
     * @param run one timed run after that many untimed units of the same work on the same resources; throws
     *            when it fails
     */
    record Side(String name, boolean canWarm, IntFunction<Measured> run) {
        /** {@return a side of ours: it can be warmed} */
        static Side ours(String name, IntFunction<Measured> run) {
            return new Side(name, true, run);
        }

        /** {@return a C tool's side: each run a new process, so never warmed; its failures as outcomes} */
        static Side tool(String name, Supplier<CTools.Outcome> run) {
            return new Side(name, false, warm -> {
                CTools.Outcome o = run.get();
                if (!o.ok()) {
                    throw new IllegalStateException(o.error());
                }
                return new Measured(o.value(), Double.NaN, o.cpuPerMessage());
            });
        }
    }

    /**
     * The rules of one comparison, the same for all its sides.
     *
     * @param pairs rounds: timed runs of each side
     * @param warm untimed units before each timed run, each side the same (0: cold)
     * @param beforeEachRun run before every timed run of every side
     */
    record Rules(int pairs, int warm, Runnable beforeEachRun) {
    }

    /**
     * What the sides measured: per side, the values of its runs that succeeded and the errors of those that
     * failed; {@code forks} holds the fork of each round; {@code restarts} how many of each side's runs were
     * started again ({@link NothingMeasured}).
     */
    record Runs(List<String> names, List<List<Measured>> measured, List<List<String>> errors, List<Integer> forks,
                List<Integer> restarts) {
        Runs(List<String> names, List<List<Measured>> measured, List<List<String>> errors, List<Integer> forks) {
            this(names, measured, errors, forks, names.stream().map(n -> 0).toList());
        }

        /** {@return side {@code s}'s values} */
        List<Double> values(int s) {
            return measured.get(s).stream().map(Measured::value).toList();
        }

        /** {@return side {@code s}'s CPU per message where measured} */
        List<Double> cpu(int s) {
            return measured.get(s).stream().map(Measured::cpu).filter(v -> !Double.isNaN(v)).toList();
        }

        /** {@return the largest heap per message of side {@code s}, NaN if none} */
        double alloc(int s) {
            return measured.get(s).stream().mapToDouble(Measured::alloc).filter(v -> !Double.isNaN(v)).max()
                    .orElse(Double.NaN);
        }

        /** {@return whether a run of side 0 or of side {@code s} failed, or one of them has no run} */
        boolean failed(int s) {
            return !errors.getFirst().isEmpty() || !errors.get(s).isEmpty() || measured.getFirst().isEmpty()
                    || measured.get(s).isEmpty();
        }

        /** {@return the 95 % interval of side 0's statistic over side {@code s}'s} */
        Verdict.Interval interval(int s, ToDoubleFunction<List<Double>> statistic) {
            return failed(s) ? Verdict.Interval.NONE
                    : Verdict.ratioInterval(values(0), values(s), forks.size() > 1 && forks.stream().distinct().count()
                    > 1 ? forks : null, statistic);
        }

        /** {@return these runs and {@code more}'s, {@code more}'s rounds in fork {@code fork}} */
        Runs plus(Runs more, int fork) {
            List<List<Measured>> m = new ArrayList<>();
            List<List<String>> e = new ArrayList<>();
            for (int s = 0; s < names.size(); s++) {
                m.add(concat(measured.get(s), more.measured.get(s)));
                e.add(concat(errors.get(s), more.errors.get(s)));
            }
            List<Integer> f = new ArrayList<>(forks);
            more.forks.forEach(x -> f.add(fork));
            List<Integer> restarted = new ArrayList<>();
            for (int s = 0; s < names.size(); s++) {
                restarted.add(restarts.get(s) + more.restarts.get(s));
            }
            return new Runs(names, m, e, f, restarted);
        }

        /** {@return no runs of these sides} */
        static Runs none(List<String> names) {
            List<List<Measured>> m = new ArrayList<>();
            List<List<String>> e = new ArrayList<>();
            names.forEach(n -> {
                m.add(List.of());
                e.add(List.of());
            });
            return new Runs(names, m, e, List.of());
        }

        private static <T> List<T> concat(List<T> a, List<T> b) {
            List<T> all = new ArrayList<>(a);
            all.addAll(b);
            return all;
        }
    }

    private final int repeat;
    private final Runnable beforeEachRun;
    private final Consumer<Row> progress;
    private boolean failed;

    /**
     * @param repeat pairs per comparison
     * @param beforeEachRun run before every timed run of every side (the wait for an idle JIT)
     * @param progress prints a finished row
     */
    Comparison(int repeat, Runnable beforeEachRun, Consumer<Row> progress) {
        this.repeat = repeat;
        this.beforeEachRun = beforeEachRun;
        this.progress = progress;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /** {@return the rules of a comparison with {@code warm} untimed units before each run} */
    Rules rules(int warm) {
        return new Rules(repeat, warm, beforeEachRun);
    }

    /**
     * Measures the sides by {@code rules}: {@code rules.pairs()} rounds, each side once per round in the order
     * given, each run after {@code rules.beforeEachRun()} and {@code rules.warm()} untimed units.
     *
     * @throws IllegalArgumentException when the rules warm and a side cannot be warmed: then no side is
     */
    static Runs run(Rules rules, List<Side> sides) {
        if (rules.warm() > 0) {
            for (Side s : sides) {
                if (!s.canWarm()) {
                    throw new IllegalArgumentException(s.name() + " cannot be warmed: warm no side, for all to be "
                            + "measured alike");
                }
            }
        }
        List<List<Measured>> measured = new ArrayList<>();
        List<List<String>> errors = new ArrayList<>();
        int[] restarts = new int[sides.size()];
        for (int s = 0; s < sides.size(); s++) {
            measured.add(new ArrayList<>());
            errors.add(new ArrayList<>());
        }
        for (int r = 0; r < rules.pairs(); r++) {
            for (int s = 0; s < sides.size(); s++) {
                for (int attempt = 0; ; attempt++) {
                    rules.beforeEachRun().run();
                    try {
                        measured.get(s).add(sides.get(s).run().apply(rules.warm()));
                    } catch (NothingMeasured e) {
                        if (attempt < MAX_RESTARTS) {
                            restarts[s]++;
                            continue;
                        }
                        errors.get(s).add(sides.get(s).name() + " measured nothing " + (attempt + 1) + " times: "
                                + e.getMessage());
                    } catch (RuntimeException e) {
                        errors.get(s).add(sides.get(s).name() + " failed: " + e.getMessage());
                    }
                    break;
                }
            }
        }
        List<Integer> forks = new ArrayList<>();
        for (int r = 0; r < rules.pairs(); r++) {
            forks.add(0);
        }
        return new Runs(sides.stream().map(Side::name).toList(), measured, errors, forks,
                java.util.Arrays.stream(restarts).boxed().toList());
    }

    /**
     * Runs {@code count} forks, each measuring all the sides with the same rules, and pools their runs, each
     * round with its fork's number. A fork that fails leaves the rounds it did not deliver failed.
     *
     * @param names the sides, as each fork names them
     * @param count how many forks
     * @param fork runs fork {@code f} and returns its runs
     * @param failed where a failed fork's error goes
     */
    static Runs forks(List<String> names, int count, IntFunction<Runs> fork, Consumer<String> failed) {
        Runs all = Runs.none(names);
        for (int f = 0; f < count; f++) {
            try {
                all = all.plus(fork.apply(f), f);
            } catch (RuntimeException e) {
                failed.accept("fork " + (f + 1) + " failed: " + e.getMessage());
                List<List<String>> errors = new ArrayList<>();
                names.forEach(n -> errors.add(List.of(n + " in fork failed")));
                all = all.plus(new Runs(names, Runs.none(names).measured(), errors, List.of()), f);
            }
        }
        return all;
    }

    /**
     * Measures ours against a C tool with {@link #run}: cold on both sides (the tool starts a new process each
     * run), the wait for an idle JIT before every run of each, {@code repeat} pairs, each side's median.
     */
    Row compare(String metric, long size, String unit, String tool, Row.Target target,
                Supplier<Measured> ours, Supplier<CTools.Outcome> c, String baseNote) {
        Runs runs = run(rules(0), List.of(Side.ours("ours", warm -> ours.get()), Side.tool(tool, c)));
        Row row = row(metric, size, unit, tool, target, runs, 1, Stats::median, baseNote, "C");
        progress.accept(row);
        return row;
    }

    /**
     * The row of side 0 against side {@code baseline}: each side's statistic, the interval of their ratio,
     * whether a run failed (which fails the row), and a note with both ranges and every error.
     */
    Row row(String metric, long size, String unit, String tool, Row.Target target, Runs runs, int baseline,
            ToDoubleFunction<List<Double>> statistic, String baseNote, String baselineName) {
        if (!runs.errors().getFirst().isEmpty()) {
            failed = true;
        }
        return row(metric, size, unit, tool, target, runs, baseline, statistic, baseNote, baselineName, repeat);
    }

    /** {@link #row(String, long, String, String, Row.Target, Runs, int, ToDoubleFunction, String, String)} */
    static Row row(String metric, long size, String unit, String tool, Row.Target target, Runs runs, int baseline,
                   ToDoubleFunction<List<Double>> statistic, String baseNote, String baselineName, int pairs) {
        List<Double> mine = runs.values(0);
        List<Double> theirs = runs.values(baseline);
        List<String> parts = new ArrayList<>();
        if (!baseNote.isEmpty()) {
            parts.add(baseNote);
        }
        if (!mine.isEmpty() && !theirs.isEmpty()) {
            parts.add(mine.size() + " pairs, alternating: ours " + Stats.range(mine) + ", " + baselineName + " "
                    + Stats.range(theirs));
        }
        List<Double> myCpu = runs.cpu(0);
        List<Double> theirCpu = runs.cpu(baseline);
        if (pairs > 1 && (!myCpu.isEmpty() || !theirCpu.isEmpty())) {
            parts.add("CPU us/msg " + (myCpu.isEmpty() ? "" : "ours " + Stats.range(myCpu)) + (theirCpu.isEmpty()
                    ? "" : (myCpu.isEmpty() ? "" : ", ") + baselineName + " " + Stats.range(theirCpu)));
        }
        if (runs.restarts().stream().anyMatch(n -> n > 0)) {
            List<String> restarted = new ArrayList<>();
            for (int s = 0; s < runs.names().size(); s++) {
                restarted.add((s == 0 ? "ours" : runs.names().get(s)) + " " + runs.restarts().get(s));
            }
            parts.add("runs started again after measuring nothing: " + String.join(", ", restarted));
        }
        for (List<String> e : runs.errors()) {
            parts.addAll(e.stream().distinct().toList());
        }
        boolean anyFailed = runs.failed(baseline);
        Row row = new Row(metric, size, unit, statistic.applyAsDouble(mine), statistic.applyAsDouble(theirs), tool,
                target, runs.alloc(0), String.join("; ", parts), Stats.median(myCpu), Stats.median(theirCpu));
        return target.isRatio() ? row.judged(runs.interval(baseline, statistic), anyFailed) : row;
    }
}
