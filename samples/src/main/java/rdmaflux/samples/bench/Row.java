package rdmaflux.samples.bench;

/**
 * One line of the result table: what we measured, what the C tool measured on the same device in the
 * same run, their ratio, and whether the target holds.
 *
 * @param metric what is measured, e.g. {@code send/recv latency p50}
 * @param size message size in bytes, or 0 when not applicable
 * @param unit unit of {@code ours} and {@code c}
 * @param ours our value, NaN when not measured
 * @param c the C tool's value, NaN when not measured
 * @param cTool the C tool that produced {@code c}
 * @param target the target on ours/c, with its bound
 * @param allocPerMessage steady-state heap bytes allocated per message by our loop's threads, NaN when not measured
 * @param note why a value is missing, or a remark
 * @param cpuOurs process CPU time (user + system) per message of ours over the timed part, in microseconds,
 *                NaN when not measured ({@link CpuTime})
 * @param cpuC the same for the C tool's processes, NaN when not measured
 * @param interval the 95 % interval of ours / c over the paired runs ({@link Verdict#ratioInterval}); a ratio
 *                 target without one is inconclusive
 * @param failed whether a run of either side failed: a ratio target is then {@link Verdict.Outcome#FAILED}
 */
record Row(String metric, long size, String unit, double ours, double c, String cTool, Target target,
           double allocPerMessage, String note, double cpuOurs, double cpuC, Verdict.Interval interval,
           boolean failed) {

    /** A row without the CPU column, interval or failure. */
    Row(String metric, long size, String unit, double ours, double c, String cTool, Target target,
        double allocPerMessage, String note) {
        this(metric, size, unit, ours, c, cTool, target, allocPerMessage, note, Double.NaN, Double.NaN);
    }

    /** A row without interval or failure. */
    Row(String metric, long size, String unit, double ours, double c, String cTool, Target target,
        double allocPerMessage, String note, double cpuOurs, double cpuC) {
        this(metric, size, unit, ours, c, cTool, target, allocPerMessage, note, cpuOurs, cpuC,
                Verdict.Interval.NONE, false);
    }

    /** {@return this row with the CPU time per message of both sides} */
    Row withCpu(double ours, double theirs) {
        return new Row(metric, size, unit, this.ours, c, cTool, target, allocPerMessage, note, ours, theirs,
                interval, failed);
    }

    /** {@return this row with another note} */
    Row withNote(String text) {
        return new Row(metric, size, unit, ours, c, cTool, target, allocPerMessage, text, cpuOurs, cpuC, interval,
                failed);
    }

    /** {@return this row with the interval of its ratio and whether a run of either side failed} */
    Row judged(Verdict.Interval ci, boolean anyFailed) {
        return new Row(metric, size, unit, ours, c, cTool, target, allocPerMessage, note, cpuOurs, cpuC, ci,
                anyFailed);
    }

    /**
     * What must hold for a row: a kind of target and its bound. The class that makes a row chooses both;
     * {@link #RATIO_AT_MOST} and {@link #RATIO_AT_LEAST} are the latency and bandwidth targets most rows have.
     *
     * @param kind what is compared with the bound
     * @param bound the bound: on ours/C for the ratios, in the row's own unit for {@link Kind#AT_MOST}
     */
    record Target(Kind kind, double bound) {
        /** Latency target: p50 at most 1.10 × C. */
        static final Target RATIO_AT_MOST = ratioAtMost(1.10);
        /** Bandwidth target: at least 0.95 × C. */
        static final Target RATIO_AT_LEAST = ratioAtLeast(0.95);
        /** ours must be 0 (allocation). */
        static final Target ZERO = new Target(Kind.ZERO, 0);
        /** Informational. */
        static final Target NONE = new Target(Kind.NONE, 0);

        /** {@return ours / C at most {@code bound}} */
        static Target ratioAtMost(double bound) {
            return new Target(Kind.RATIO_AT_MOST, bound);
        }

        /** {@return ours / C at least {@code bound}} */
        static Target ratioAtLeast(double bound) {
            return new Target(Kind.RATIO_AT_LEAST, bound);
        }

        /** {@return ours at most {@code bound} in the row's own unit} */
        static Target atMost(double bound) {
            return new Target(Kind.AT_MOST, bound);
        }

        /** {@return whether the target bounds ours / C} */
        boolean isRatio() {
            return kind == Kind.RATIO_AT_MOST || kind == Kind.RATIO_AT_LEAST;
        }

        /** The kinds of target. */
        enum Kind {
            /** ours / C at most the bound (latency). */
            RATIO_AT_MOST,
            /** ours / C at least the bound (bandwidth, rates). */
            RATIO_AT_LEAST,
            /** ours must be 0 (allocation). */
            ZERO,
            /** ours at most a bound in the row's own unit (allocation of the reactive APIs). */
            AT_MOST,
            /** informational. */
            NONE;
        }
    }

    /** {@return ours / C, NaN when either is missing} */
    double ratio() {
        return Double.isNaN(ours) || Double.isNaN(c) || c == 0 ? Double.NaN : ours / c;
    }

    /** {@return the bound of the target as text, e.g. {@code <= 1.10}} */
    String targetText() {
        return switch (target.kind()) {
            case RATIO_AT_MOST -> "ratio <= " + fmt(bound());
            case RATIO_AT_LEAST -> "ratio >= " + fmt(bound());
            case ZERO -> "0 B/msg";
            case AT_MOST -> String.format("<= %.0f %s", bound(), unit);
            case NONE -> "-";
        };
    }

    /** {@return the bound of the target} */
    double bound() {
        return target.bound();
    }

    /**
     * {@return what the target comes to} A ratio target goes by {@link Verdict#judge}: failed when a side failed
     * or has no value, met or missed only when the whole interval is on one side of the bound, inconclusive
     * otherwise. The targets on ours alone go by its value; without one they failed.
     */
    Verdict.Outcome outcome() {
        return switch (target.kind()) {
            case NONE -> Verdict.Outcome.NONE;
            case ZERO -> Double.isNaN(ours) ? Verdict.Outcome.FAILED
                    : ours == 0 ? Verdict.Outcome.MET : Verdict.Outcome.MISSED;
            case AT_MOST -> Double.isNaN(ours) ? Verdict.Outcome.FAILED
                    : ours <= bound() ? Verdict.Outcome.MET : Verdict.Outcome.MISSED;
            case RATIO_AT_MOST, RATIO_AT_LEAST -> Verdict.judge(target.kind() == Target.Kind.RATIO_AT_MOST, bound(),
                    interval, failed || Double.isNaN(ratio()));
        };
    }

    /** {@return the verdict as the table shows it: met, MISSED, inconclusive, FAILED, or {@code -} without target} */
    String verdict() {
        if (target.kind() == Target.Kind.NONE && Double.isNaN(ours)) {
            return "not measured";
        }
        return outcome().text();
    }

    /** {@return whether the row has a target that was missed} */
    boolean missed() {
        return outcome() == Verdict.Outcome.MISSED;
    }

    /** {@return whether the row has a target that was missed, could not be judged, or whose measurement failed} */
    boolean notMet() {
        return outcome().notMet();
    }

    /** {@return the ratio's 95 % interval as {@code lo-hi}, or {@code -} without one} */
    String intervalText() {
        return interval.known() ? fmt(interval.lo()) + "-" + fmt(interval.hi()) : "-";
    }

    static String fmt(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        double a = Math.abs(v);
        if (a == 0) {
            return "0";
        }
        if (a >= 1000) {
            return String.format("%.0f", v);
        }
        if (a >= 100) {
            return String.format("%.1f", v);
        }
        if (a >= 1) {
            return String.format("%.2f", v);
        }
        return String.format("%.3g", v);
    }

    static String sizeText(long size) {
        if (size <= 0) {
            return "";
        }
        if (size >= 1 << 20 && size % (1 << 20) == 0) {
            return (size >> 20) + " MiB";
        }
        if (size >= 1024 && size % 1024 == 0) {
            return (size >> 10) + " KiB";
        }
        return size + " B";
    }
}
