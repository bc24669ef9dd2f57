package rdmaflux.samples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The ratio's bootstrap interval and the outcomes it allows. */
class VerdictTest {
    private static final Row.Target AT_LEAST = Row.Target.ratioAtLeast(0.85);
    private static final Row.Target AT_MOST = Row.Target.ratioAtMost(1.3);

    private static Verdict.Outcome judge(Row.Target target, Verdict.Interval ci, boolean failed) {
        return Verdict.judge(target.kind() == Row.Target.Kind.RATIO_AT_MOST, target.bound(), ci, failed);
    }

    private static Verdict.Interval interval(List<Double> ours, List<Double> baseline) {
        return Verdict.ratioInterval(ours, baseline, null, Stats::median);
    }

    @Test
    void constantSidesGiveTheirRatioAsTheWholeInterval() {
        Verdict.Interval ci = interval(List.of(10.0, 10.0, 10.0, 10.0, 10.0), List.of(5.0, 5.0, 5.0, 5.0, 5.0));
        assertEquals(2.0, ci.lo(), 1e-12);
        assertEquals(2.0, ci.hi(), 1e-12);
        assertEquals("2.00-2.00", new Row("r", 2, "msg/s", 10, 5, "t", AT_LEAST, 0, "").judged(ci, false)
                .intervalText());
    }

    @Test
    void theIntervalHoldsThePointRatioAndLiesWithinTheRunsRatios() {
        List<Double> ours = List.of(9.0, 10.0, 11.0, 10.5, 9.5, 10.2, 9.8);
        List<Double> base = List.of(10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0);
        Verdict.Interval ci = interval(ours, base);
        double point = Stats.median(ours) / Stats.median(base);
        assertTrue(ci.lo() <= point && point <= ci.hi(), ci + " around " + point);
        assertTrue(ci.lo() >= 0.9 && ci.hi() <= 1.1, ci.toString());
        assertTrue(ci.lo() < ci.hi(), ci.toString());
    }

    @Test
    void theSameRunsAlwaysGiveTheSameInterval() {
        List<Double> ours = List.of(8.0, 12.0, 9.5, 11.0, 10.0, 7.0);
        List<Double> base = List.of(10.0, 9.0, 11.0, 10.5, 9.5, 12.0);
        assertEquals(interval(ours, base), interval(ours, base));
        assertEquals(Verdict.SEED, 39);
    }

    @Test
    void metOnlyWhenTheWholeIntervalIsOnTheTargetsSide() {
        List<Double> base = List.of(10.0, 10.0, 10.0, 10.0, 10.0);
        Verdict.Interval clear = interval(List.of(9.0, 9.2, 9.1, 8.9, 9.3), base);
        assertEquals(Verdict.Outcome.MET, judge(AT_LEAST, clear, false));
        Verdict.Interval below = interval(List.of(5.0, 5.2, 4.9, 5.1, 5.0), base);
        assertEquals(Verdict.Outcome.MISSED, judge(AT_LEAST, below, false));
    }

    @Test
    void anIntervalThatStraddlesTheBoundIsInconclusive() {
        // Ours from 0.7 to 1.0 of the baseline: the point ratio (0.85) meets the bound, the interval holds both sides.
        List<Double> ours = List.of(7.0, 10.0, 8.5, 7.5, 9.5, 8.0, 9.0);
        List<Double> base = List.of(10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0);
        Verdict.Interval ci = interval(ours, base);
        assertTrue(ci.lo() < 0.85 && ci.hi() > 0.85, ci.toString());
        assertEquals(Verdict.Outcome.INCONCLUSIVE, judge(AT_LEAST, ci, false));
        assertTrue(Verdict.Outcome.INCONCLUSIVE.notMet());
    }

    @Test
    void atMostTargetsAreJudgedByTheUpperEnd() {
        assertEquals(Verdict.Outcome.MET, judge(AT_MOST, new Verdict.Interval(1.1, 1.29), false));
        assertEquals(Verdict.Outcome.INCONCLUSIVE, judge(AT_MOST, new Verdict.Interval(1.2, 1.31), false));
        assertEquals(Verdict.Outcome.MISSED, judge(AT_MOST, new Verdict.Interval(1.31, 1.5), false));
    }

    @Test
    void tooFewPairsGiveNoIntervalAndNoVerdict() {
        List<Double> four = List.of(10.0, 10.0, 10.0, 10.0);
        Verdict.Interval ci = interval(four, List.of(1.0, 1.0, 1.0, 1.0));
        assertFalse(ci.known());
        assertEquals("-", new Row("r", 2, "msg/s", 10, 1, "t", AT_LEAST, 0, "").judged(ci, false).intervalText());
        assertEquals(Verdict.Outcome.INCONCLUSIVE, judge(AT_LEAST, ci, false));
        // Unequal sides are no pairs.
        assertFalse(interval(List.of(1.0, 1.0, 1.0, 1.0, 1.0), List.of(1.0, 1.0, 1.0, 1.0)).known());
    }

    @Test
    void aFailedSideIsFailedWhateverTheInterval() {
        assertEquals(Verdict.Outcome.FAILED, judge(AT_LEAST, new Verdict.Interval(2, 3), true));
        assertEquals(Verdict.Outcome.FAILED, judge(AT_MOST, Verdict.Interval.NONE, true));
    }

    /** Forks that disagree: resampling forks first spreads the interval over both forks' ratios. */
    @Test
    void forksAreResampledAsWholes() {
        List<Double> ours = List.of(10.0, 10.1, 9.9, 10.0, 10.0, 15.0, 15.1, 14.9, 15.0, 15.0);
        List<Double> base = java.util.Collections.nCopies(10, 10.0);
        List<Integer> forks = List.of(0, 0, 0, 0, 0, 1, 1, 1, 1, 1);
        Verdict.Interval byFork = Verdict.ratioInterval(ours, base, forks, Stats::median);
        assertTrue(byFork.lo() <= 1.0 && byFork.hi() >= 1.5, byFork.toString());
        Verdict.Interval byRun = interval(ours, base);
        assertTrue(byRun.hi() - byRun.lo() <= byFork.hi() - byFork.lo(), byRun + " vs " + byFork);
    }

    @Test
    void quantilesInterpolate() {
        double[] v = {1, 2, 3, 4, 5};
        assertEquals(1, Verdict.quantile(v, 0), 1e-12);
        assertEquals(3, Verdict.quantile(v, 0.5), 1e-12);
        assertEquals(4.5, Verdict.quantile(v, 0.875), 1e-12);
        assertEquals(5, Verdict.quantile(v, 1), 1e-12);
    }

    @Test
    void theStatisticIsTheRowsOwn() {
        // The stream rows judge by the fast mode: slow-mode streams of either side do not move the ratio.
        List<Double> ours = List.of(100.0, 100.0, 20.0, 100.0, 100.0, 100.0);
        List<Double> base = List.of(100.0, 20.0, 100.0, 100.0, 100.0, 100.0);
        Verdict.Interval ci = Verdict.ratioInterval(ours, base, null, Stats::fastMode);
        assertEquals(1.0, ci.lo(), 1e-12);
        assertEquals(1.0, ci.hi(), 1e-12);
    }

    @Test
    void theSummaryCountsEveryOutcomeAndListsAllNotMet() {
        Row met = new Row("a", 2, "us", 1, 1, "t", AT_MOST, 0, "").judged(new Verdict.Interval(0.9, 1.1), false);
        Row missed = new Row("b", 2, "us", 2, 1, "t", AT_MOST, 0, "").judged(new Verdict.Interval(1.8, 2.2), false);
        Row open = new Row("c", 2, "us", 1.2, 1, "t", AT_MOST, 0, "").judged(new Verdict.Interval(1.1, 1.4), false);
        Row failed = new Row("d", 2, "us", 1, Double.NaN, "t", AT_MOST, 0, "");
        Row info = new Row("e", 2, "us", 1, 1, "t", Row.Target.NONE, 0, "");
        String summary = Table.summary(List.of(met, missed, open, failed, info));
        assertTrue(summary.startsWith("Targets: 1 met, 1 missed, 1 inconclusive, 1 failed."), summary);
        assertTrue(summary.contains("Not met (3)"), summary);
        assertTrue(summary.contains("b 2 B (MISSED") && summary.contains("c 2 B (inconclusive, ratio 1.20 [1.10-1.40]")
                && summary.contains("d 2 B (FAILED"), summary);
        assertFalse(summary.contains("a 2 B"), summary);
        assertTrue(Table.summary(List.of(met, info)).endsWith("all targets met."));
        String md = Table.markdown(List.of(met, open));
        assertTrue(md.contains("| 1.00 | 0.900-1.10 | ratio <= 1.30 | met |"), md);
        assertTrue(md.contains("| **inconclusive** |"), md);
    }
}
