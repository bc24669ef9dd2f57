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
 * @param target the target on ours/c
 * @param allocPerMessage steady-state heap bytes allocated per message by our loop's threads, NaN when not measured
 * @param note why a value is missing, or a remark
 * @param cpuOurs process CPU time (user + system) per message of ours over the timed part, in microseconds,
 *                NaN when not measured ({@link CpuTime})
 * @param cpuC the same for the C tool's processes, NaN when not measured
 */
record Row(String metric, long size, String unit, double ours, double c, String cTool, Target target,
           double allocPerMessage, String note, double cpuOurs, double cpuC) {

    /** A row without the CPU column. */
    Row(String metric, long size, String unit, double ours, double c, String cTool, Target target,
        double allocPerMessage, String note) {
        this(metric, size, unit, ours, c, cTool, target, allocPerMessage, note, Double.NaN, Double.NaN);
    }

    /** {@return this row with the CPU time per message of both sides} */
    Row withCpu(double ours, double theirs) {
        return new Row(metric, size, unit, this.ours, c, cTool, target, allocPerMessage, note, ours, theirs);
    }

    /** {@return this row with another note} */
    Row withNote(String text) {
        return new Row(metric, size, unit, ours, c, cTool, target, allocPerMessage, text, cpuOurs, cpuC);
    }

    /** What must hold for a row. */
    enum Target {
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

    /** Latency target: p50 at most 1.10 × C. */
    static final double LATENCY_BOUND = 1.10;
    /** Bandwidth target: at least 0.95 × C. */
    static final double BANDWIDTH_BOUND = 0.95;
    /** Target of the reactive large-message rows: at least 0.9 × {@code ib_read_bw}. */
    static final double LARGE_BOUND = 0.9;
    /** The metric of the reactive large-message rows. */
    static final String LARGE_METRIC = "reactive large-message bandwidth";
    /** Connection setup target: at least 0.8 × cmtime's rate. */
    static final double SETUP_BOUND = 0.8;
    /** Reactive SEND stream target (issue #11): at least 0.85 × the verbs layer's SEND stream. */
    static final double STREAM_BOUND = 0.85;
    /** RSocket request-response target (issue #13): p50 at most 1.3 × the reactive ping-pong's. */
    static final double RSOCKET_LATENCY_BOUND = 1.3;
    /** RSocket request-stream target (issue #13): at least 0.8 × the reactive SEND stream. */
    static final double RSOCKET_STREAM_BOUND = 0.8;
    /** Heap bytes per message {@code send(Publisher)} may allocate (issue #11). */
    static final double ALLOC_PUBLISHER_BOUND = 64;
    /** Heap bytes per message {@code send(ByteBuffer)} may allocate (issue #11). */
    static final double ALLOC_SINGLE_BOUND = 200;
    /** The metric of the reactive multicast rows. */
    static final String REACTIVE_MULTICAST_METRIC = "multicast datagram rate, reactive API";
    /** Reactive multicast target: at least 0.8 × mckey. */
    static final double REACTIVE_MULTICAST_BOUND = 0.8;
    /** The metric of the reactive busy-poll ping-pong row. */
    static final String BUSY_POLL_METRIC = "reactive send/recv latency p50, busy-poll";
    /** Its target: p50 at most 1.3 × the verbs layer's spin ping-pong (spin hint) of the same run. */
    static final double BUSY_POLL_BOUND = 1.3;

    /** {@return ours / C, NaN when either is missing} */
    double ratio() {
        return Double.isNaN(ours) || Double.isNaN(c) || c == 0 ? Double.NaN : ours / c;
    }

    /** {@return the bound of the target as text, e.g. {@code <= 1.10}} */
    String targetText() {
        return switch (target) {
            case RATIO_AT_MOST -> "ratio <= " + fmt(bound());
            case RATIO_AT_LEAST -> "ratio >= " + fmt(bound());
            case ZERO -> "0 B/msg";
            case AT_MOST -> String.format("<= %.0f %s", bound(), unit);
            case NONE -> "-";
        };
    }

    double bound() {
        return switch (target) {
            case RATIO_AT_MOST -> metric.equals(StreamRows.RR_METRIC) ? RSOCKET_LATENCY_BOUND
                    : metric.equals(BUSY_POLL_METRIC) ? BUSY_POLL_BOUND : LATENCY_BOUND;
            case RATIO_AT_LEAST -> unit.equals("conn/s") ? SETUP_BOUND
                    : metric.equals(LARGE_METRIC) ? LARGE_BOUND
                    : metric.equals(StreamRows.STREAM_METRIC) ? STREAM_BOUND
                    : metric.equals(StreamRows.RS_METRIC) ? RSOCKET_STREAM_BOUND
                    : metric.equals(REACTIVE_MULTICAST_METRIC) ? REACTIVE_MULTICAST_BOUND : BANDWIDTH_BOUND;
            case AT_MOST -> metric.equals(StreamRows.ALLOC_PUBLISHER) ? ALLOC_PUBLISHER_BOUND : ALLOC_SINGLE_BOUND;
            default -> 0;
        };
    }

    /** {@return {@code met}, {@code MISSED}, or why it cannot be judged} */
    String verdict() {
        return switch (target) {
            case NONE -> Double.isNaN(ours) ? "not measured yet" : "-";
            case ZERO -> Double.isNaN(ours) ? "not measured" : ours == 0 ? "met" : "MISSED";
            case AT_MOST -> Double.isNaN(ours) ? "not measured" : ours <= bound() ? "met" : "MISSED";
            case RATIO_AT_MOST, RATIO_AT_LEAST -> {
                double r = ratio();
                if (Double.isNaN(r)) {
                    yield Double.isNaN(ours) ? "not measured" : "no C value";
                }
                boolean ok = target == Target.RATIO_AT_MOST ? r <= bound() : r >= bound();
                yield ok ? "met" : "MISSED";
            }
        };
    }

    /** {@return whether the row has a target that was missed} */
    boolean missed() {
        return verdict().equals("MISSED");
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
