package rdmaflux.samples.bench;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the results the C tools print: perftest's result tables and banner, cmtime's step table. Pure
 * functions of the text, unit-tested on captured output ({@code BenchParsingTest}).
 */
final class ToolOutput {
    /** {@link CTools.Outcome#postApi} of a perftest run that used {@code ibv_wr_*}. */
    static final String WR_API = "ibv_wr_*";
    /** {@link CTools.Outcome#postApi} of a perftest run that used {@code ibv_post_send}. */
    static final String POST_SEND_API = "ibv_post_send";

    private ToolOutput() {
    }

    /**
     * Reads which post API perftest used from its banner ({@code  ibv_wr* API     : ON}).
     *
     * @return {@code ibv_wr_*}, {@code ibv_post_send}, or {@code null} when the banner has no such line
     */
    static String postApi(String text) {
        for (String line : text.split("\n")) {
            String t = line.trim();
            if (t.startsWith("ibv_wr* API")) {
                return t.endsWith("ON") ? WR_API : t.endsWith("OFF") ? POST_SEND_API : null;
            }
        }
        return null;
    }

    /** {@return whether {@code line} is perftest's result line for {@code size}: the size, then the count} */
    static boolean isResultLine(String line, long size) {
        String[] f = line.trim().split("\\s+");
        return f.length >= 5 && f[0].equals(Long.toString(size)) && f[1].chars().allMatch(Character::isDigit);
    }

    /**
     * Reads a perftest bandwidth report's average in bytes per second from whichever column keeps more
     * digits: BW average (MiB/s, two decimals) for fast runs, the message rate (Mpps, six decimals) times
     * the size for slow ones, where the MiB/s column rounds to a few hundredths or to 0.00.
     */
    static double bandwidthBytesPerSecond(String text, long size) {
        double mib = parseRow(text, size, 5, 3);
        double mpps = parseRow(text, size, 5, 4);
        if (!Double.isNaN(mib) && mib >= 100) {
            return mib * 1024 * 1024;
        }
        return mpps * 1e6 * size;
    }

    /** Finds the result line of {@code size} and returns one column, NaN if absent. */
    static double parseRow(String text, long size, int columns, int column) {
        for (String cell : (Iterable<String>) resultCells(text, size, columns, column)::iterator) {
            try {
                return Double.parseDouble(cell);
            } catch (NumberFormatException e) {
                // a banner line that happens to start with the number; keep looking
            }
        }
        return Double.NaN;
    }

    /** Column {@code column} of each line that starts with {@code size} and has at least {@code columns} fields. */
    private static java.util.stream.Stream<String> resultCells(String text, long size, int columns, int column) {
        String key = Long.toString(size);
        return text.lines().map(l -> l.trim().split("\\s+")).filter(f -> f.length >= columns && f[0].equals(key))
                .map(f -> f[column]);
    }

    /** Parses cmtime's {@code step: total_ms max_ms min_us us_per_conn} lines. */
    static Map<ConnectionRate.Step, Double> parseCmtime(String text) {
        Map<ConnectionRate.Step, Double> totals = new EnumMap<>(ConnectionRate.Step.class);
        for (String line : text.split("\n")) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = line.substring(0, colon).trim();
            String[] f = line.substring(colon + 1).trim().split("\\s+");
            for (ConnectionRate.Step s : ConnectionRate.Step.values()) {
                if (s.label.equals(name) && f.length >= 4) {
                    try {
                        totals.put(s, Double.parseDouble(f[0]));
                    } catch (NumberFormatException e) {
                        // not the table
                    }
                }
            }
        }
        return totals;
    }

    /**
     * {@return whether iproute2's {@code rdma resource show cm_id} output lists an id listening on
     * {@code port}} Its lines read {@code link rxe0/- cm-idn 0 state LISTEN ps TCP pid 160 comm ib_send_lat
     * src-addr 0.0.0.0:18600}.
     */
    static boolean listensOn(String cmIds, int port) {
        return java.util.regex.Pattern.compile("\\bstate LISTEN\\b.*\\bsrc-addr \\S*:" + port + "(?!\\d)")
                .matcher(cmIds).find();
    }

    /**
     * {@return what a failed tool's output says of the failure: the first 3 lines that name an RDMA CM event,
     * then its last 3 lines, each line once, joined with {@code " | "}} perftest prints the event that failed its
     * connection ({@code Event: RDMA_CM_EVENT_REJECTED; error: 8.}) lines before the generic
     * {@code Failed to connect RDMA CM events.} and {@code ERRNO} lines that end its output, so its last lines
     * alone do not say why it failed.
     */
    static String failure(String text) {
        List<String> lines = text.strip().lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        java.util.Set<String> out = new java.util.LinkedHashSet<>();
        lines.stream().filter(l -> l.contains("Event:") || l.contains("event error")).limit(3).forEach(out::add);
        out.addAll(lines.subList(Math.max(0, lines.size() - 3), lines.size()));
        return String.join(" | ", out);
    }

    /**
     * {@return whether a perftest tool's output says its connection was refused before it measured anything:
     * an {@code RDMA_CM_EVENT_REJECTED} and no results header}
     */
    static boolean refused(String text) {
        return text.contains("RDMA_CM_EVENT_REJECTED") && !text.contains("#bytes");
    }

    /**
     * {@return whether perftest's result row for {@code size} holds no time: {@code inf} or {@code nan} where its
     * typical latency goes (column {@code column}), as when it could not read the CPU's clock rate}
     */
    static boolean noClock(String text, long size, int columns, int column) {
        return resultCells(text, size, columns, column).map(v -> v.toLowerCase(java.util.Locale.ROOT))
                .anyMatch(v -> v.contains("inf") || v.contains("nan"));
    }
}
