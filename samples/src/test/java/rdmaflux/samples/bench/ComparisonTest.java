package rdmaflux.samples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * Each rule of {@link Comparison}, with sides that record what is done to them: both sides pass through it the
 * same way.
 */
class ComparisonTest {
    /** Everything done to the sides, in order: "wait", "A warm=2", "B warm=2", ... */
    private final List<String> log = new ArrayList<>();

    private Comparison.Side side(String name, boolean canWarm, double... values) {
        int[] next = {0};
        return new Comparison.Side(name, canWarm, warm -> {
            log.add(name + " warm=" + warm);
            double v = values[next[0]++ % values.length];
            if (Double.isNaN(v)) {
                throw new IllegalStateException(name + " broke");
            }
            return new Comparison.Measured(v, 0, 1);
        });
    }

    private Comparison.Rules rules(int pairs, int warm) {
        return new Comparison.Rules(pairs, warm, () -> log.add("wait"));
    }

    @Test
    void sidesAlternateRoundByRound() {
        Comparison.run(rules(3, 0), List.of(side("A", true, 1), side("B", false, 2)));
        List<String> runs = log.stream().filter(l -> !l.equals("wait")).map(l -> l.substring(0, 1)).toList();
        assertEquals(List.of("A", "B", "A", "B", "A", "B"), runs);
    }

    @Test
    void everySideGetsTheSameWarmUp() {
        Comparison.run(rules(2, 7), List.of(side("A", true, 1), side("B", true, 2), side("C", true, 3)));
        List<String> runs = log.stream().filter(l -> !l.equals("wait")).toList();
        assertEquals(6, runs.size());
        assertTrue(runs.stream().allMatch(l -> l.endsWith(" warm=7")), runs.toString());
    }

    @Test
    void aSideThatCannotBeWarmedMakesAllCold() {
        // A C tool starts a new process each run: rules that warm refuse to run rather than warm ours alone.
        Comparison.Rules warm = rules(2, 5);
        List<Comparison.Side> sides = List.of(side("ours", true, 1), side("tool", false, 2));
        assertThrows(IllegalArgumentException.class, () -> Comparison.run(warm, sides));
        assertTrue(log.isEmpty(), log.toString());
        // Comparison.compare, every row against a C tool: cold on both sides.
        Comparison c = new Comparison(2, () -> log.add("wait"), r -> { });
        c.compare("m", 2, "us", "tool", Row.Target.RATIO_AT_MOST, () -> {
            log.add("ours");
            return new Comparison.Measured(1, 0);
        }, () -> {
            log.add("tool");
            return new CTools.Outcome(1, null);
        }, "");
        assertEquals(List.of("wait", "ours", "wait", "tool", "wait", "ours", "wait", "tool"), log);
    }

    @Test
    void theSameWaitPrecedesEveryRunOfEverySide() {
        Comparison.run(rules(2, 1), List.of(side("A", true, 1), side("B", true, 2)));
        assertEquals(List.of("wait", "A warm=1", "wait", "B warm=1", "wait", "A warm=1", "wait", "B warm=1"), log);
    }

    @Test
    void noRunIsMeasuredAgain() {
        // A slow run and a failed one count as what they are, on either side: each side runs exactly once a round.
        Comparison.Runs runs = Comparison.run(rules(4, 0), List.of(side("A", true, 1, 50, 1, 1),
                side("B", true, 2, Double.NaN, 2, 2)));
        assertEquals(4, log.stream().filter(l -> l.startsWith("A ")).count());
        assertEquals(4, log.stream().filter(l -> l.startsWith("B ")).count());
        assertEquals(List.of(1.0, 50.0, 1.0, 1.0), runs.values(0));
        assertEquals(List.of(2.0, 2.0, 2.0), runs.values(1));
        assertEquals(List.of("B failed: B broke"), runs.errors().get(1));
    }

    /** A side whose run is refused before its timed part {@code refusals} times a round, then measures 1. */
    private Comparison.Side refused(String name, int refusals) {
        int[] tries = {0};
        return Comparison.Side.ours(name, warm -> {
            log.add(name);
            if (tries[0]++ % (refusals + 1) < refusals) {
                throw new Comparison.NothingMeasured(name + " refused");
            }
            return new Comparison.Measured(1, 0);
        });
    }

    @Test
    void aRunRefusedBeforeItsTimedPartStartsAgainOnEitherSide() {
        // Ours and the baseline each refused once a round: each attempt after the same wait, both restarted alike.
        Comparison.Runs runs = Comparison.run(rules(2, 0), List.of(refused("A", 1), refused("B", 1)));
        assertEquals(List.of("wait", "A", "wait", "A", "wait", "B", "wait", "B", "wait", "A", "wait", "A", "wait",
                "B", "wait", "B"), log);
        assertEquals(List.of(2, 2), runs.restarts());
        assertEquals(List.of(1.0, 1.0), runs.values(0));
        assertEquals(List.of(1.0, 1.0), runs.values(1));
        assertFalse(runs.failed(1));
        Row row = Comparison.row("m", 2, "us", "B", Row.Target.RATIO_AT_MOST, runs, 1, Stats::median, "", "C", 2);
        assertTrue(row.note().contains("started again after measuring nothing: ours 2, B 2"), row.note());
    }

    @Test
    void aRunRefusedOnEveryRestartFailsTheRow() {
        // Restarts are bounded, the same bound for every side: the third refusal is the run's failure.
        Comparison.Runs runs = Comparison.run(rules(1, 0), List.of(refused("A", 0), refused("B", 99)));
        assertEquals(1 + Comparison.MAX_RESTARTS, log.stream().filter("B"::equals).count());
        assertEquals(List.of(0, Comparison.MAX_RESTARTS), runs.restarts());
        assertTrue(runs.failed(1));
        assertTrue(runs.errors().get(1).getFirst().contains("measured nothing 3 times"), runs.errors().toString());
    }

    @Test
    void everyForkMeasuresEverySideAndKeepsItsNumber() {
        List<Integer> forksRun = new ArrayList<>();
        Comparison.Runs all = Comparison.forks(List.of("A", "B"), 3, f -> {
            forksRun.add(f);
            return Comparison.run(rules(2, 3), List.of(side("A", true, 1 + f), side("B", true, 1)));
        }, e -> { });
        assertEquals(List.of(0, 1, 2), forksRun);
        assertEquals(List.of(0, 0, 1, 1, 2, 2), all.forks());
        assertEquals(List.of(1.0, 1.0, 2.0, 2.0, 3.0, 3.0), all.values(0));
        assertEquals(Collections.nCopies(6, 1.0), all.values(1));
        // In each fork both sides ran the same rules: alternating, warmed alike.
        assertEquals(12, log.stream().filter(l -> l.equals("wait")).count());
        assertTrue(log.stream().filter(l -> !l.equals("wait")).allMatch(l -> l.endsWith(" warm=3")), log.toString());
        Row row = Comparison.row("m", 2, "us", "B", Row.Target.RATIO_AT_MOST, all, 1, Stats::median, "", "B", 6);
        assertTrue(row.interval().known(), row.toString());
        // Resampled by fork: the interval spans the forks' ratios, 1 to 3.
        assertEquals(1.0, row.interval().lo(), 1e-12);
        assertEquals(3.0, row.interval().hi(), 1e-12);
    }

    @Test
    void aForkThatFailsFailsTheRow() {
        List<String> errors = new ArrayList<>();
        Comparison.Runs all = Comparison.forks(List.of("A", "B"), 2, f -> {
            if (f == 1) {
                throw new IllegalStateException("exited with 1");
            }
            return Comparison.run(rules(5, 0), List.of(side("A", true, 1), side("B", true, 1)));
        }, errors::add);
        assertEquals(List.of("fork 2 failed: exited with 1"), errors);
        Row row = Comparison.row("m", 2, "us", "B", Row.Target.RATIO_AT_MOST, all, 1, Stats::median, "", "B", 10);
        assertEquals(Verdict.Outcome.FAILED, row.outcome());
    }

    @Test
    void aFailedToolFailsTheRowNeverMeetsIt() {
        Comparison c = new Comparison(5, () -> { }, r -> { });
        int[] run = {0};
        Row row = c.compare("bw", 2, "Gbit/s", "ib_send_bw", Row.Target.RATIO_AT_LEAST,
                () -> new Comparison.Measured(10, 0), () -> run[0]++ == 2 ? CTools.Outcome.failed("exited with 1")
                        : new CTools.Outcome(1, null), "");
        assertEquals(Verdict.Outcome.FAILED, row.outcome());
        assertEquals("FAILED", row.verdict());
        assertTrue(row.note().contains("ib_send_bw failed: exited with 1"), row.note());
        assertFalse(c.failed(), "ours did not fail");
        // A tool that never ran: no C value is a failed row too.
        Row none = c.compare("bw", 2, "Gbit/s", "ib_send_bw", Row.Target.RATIO_AT_LEAST,
                () -> new Comparison.Measured(10, 0), () -> CTools.Outcome.failed("not installed"), "");
        assertEquals(Verdict.Outcome.FAILED, none.outcome());
        assertTrue(Double.isNaN(none.c()));
    }

    @Test
    void aFailedRunOfOursFailsTheRow() {
        Comparison c = new Comparison(5, () -> { }, r -> { });
        int[] run = {0};
        Row row = c.compare("lat", 2, "us", "ib_send_lat", Row.Target.RATIO_AT_MOST, () -> {
            if (run[0]++ == 0) {
                throw new IllegalStateException("no echo");
            }
            return new Comparison.Measured(1, 0);
        }, () -> new CTools.Outcome(10, null), "");
        assertEquals(Verdict.Outcome.FAILED, row.outcome());
        assertTrue(c.failed());
    }

    @Test
    void aRowWithEnoughPairsIsJudgedByItsInterval() {
        Comparison c = new Comparison(5, () -> { }, r -> { });
        double[] ours = {9, 9.5, 9.2, 9.1, 9.4};
        int[] i = {0};
        Row row = c.compare("bw", 2, "Gbit/s", "ib_send_bw", Row.Target.ratioAtLeast(0.85),
                () -> new Comparison.Measured(ours[i[0]++], 0), () -> new CTools.Outcome(10, null), "");
        assertEquals(Verdict.Outcome.MET, row.outcome());
        assertEquals(0.92, row.ratio(), 1e-12);
        assertTrue(row.interval().lo() >= 0.85, row.interval().toString());
        assertTrue(row.note().contains("5 pairs, alternating"), row.note());
        // One pair, as a quick run: no interval, so no verdict either way.
        Row quick = new Comparison(1, () -> { }, r -> { }).compare("bw", 2, "Gbit/s", "ib_send_bw",
                Row.Target.RATIO_AT_LEAST, () -> new Comparison.Measured(10, 0), () -> new CTools.Outcome(1, null), "");
        assertEquals(Verdict.Outcome.INCONCLUSIVE, quick.outcome());
    }

    @Test
    void informationalSidesDoNotFailTheTargetedPair() {
        Comparison.Runs runs = Comparison.run(rules(5, 0), List.of(side("ours", true, 9), side("hint", true, 10),
                side("plain", true, Double.NaN)));
        Row row = Comparison.row("s", 2, "msg/s", "hint", Row.Target.ratioAtLeast(0.85), runs, 1, Stats::fastMode,
                "", "verbs", 5);
        assertEquals(Verdict.Outcome.MET, row.outcome());
        assertTrue(runs.failed(2));
    }
}
