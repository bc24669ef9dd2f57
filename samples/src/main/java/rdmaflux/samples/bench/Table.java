package rdmaflux.samples.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/** Renders the result rows as an aligned text table and as Markdown. */
final class Table {
    private static final String[] HEADER = {"metric", "size", "unit", "ours", "C", "C tool", "ours/C", "95 % CI",
        "target", "verdict", "alloc B/msg", "CPU us/msg ours", "CPU us/msg C", "note"};

    private Table() {
    }

    private static String[] cells(Row r) {
        return new String[] {r.metric(), Row.sizeText(r.size()), r.unit(), Row.fmt(r.ours()), Row.fmt(r.c()),
            r.cTool(), Row.fmt(r.ratio()), r.intervalText(), r.targetText(), r.verdict(),
            Row.fmt(r.allocPerMessage()), Row.fmt(r.cpuOurs()), Row.fmt(r.cpuC()), r.note()};
    }

    static String text(List<Row> rows) {
        List<String[]> all = new ArrayList<>();
        all.add(HEADER);
        rows.forEach(r -> all.add(cells(r)));
        int[] width = new int[HEADER.length];
        for (String[] c : all) {
            for (int i = 0; i < c.length; i++) {
                width[i] = Math.max(width[i], c[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (String[] c : all) {
            for (int i = 0; i < c.length; i++) {
                boolean number = i >= 3 && i <= 7 || i >= 10 && i <= 12;
                String f = "%" + (number ? "" : "-") + width[i] + "s";
                sb.append(String.format(f, c[i]));
                sb.append(i == c.length - 1 ? "\n" : "  ");
            }
        }
        return sb.toString();
    }

    static String markdown(List<Row> rows) {
        StringBuilder sb = new StringBuilder();
        sb.append("| ").append(String.join(" | ", HEADER)).append(" |\n");
        sb.append("|---|---|---|--:|--:|---|--:|--:|---|---|--:|--:|--:|---|\n");
        for (Row r : rows) {
            String[] c = cells(r);
            if (r.notMet()) {
                c[9] = "**" + c[9] + "**";
            }
            for (int i = 0; i < c.length; i++) {
                c[i] = c[i].replace("|", "\\|");
            }
            sb.append("| ").append(String.join(" | ", c)).append(" |\n");
        }
        return sb.toString();
    }

    /**
     * {@return the summary under the table: how many targets were met, missed, inconclusive and failed, and
     * which were not met} Inconclusive and failed rows are not met.
     */
    static String summary(List<Row> rows) {
        Map<Verdict.Outcome, Long> counts = new EnumMap<>(Verdict.Outcome.class);
        for (Row r : rows) {
            if (r.outcome() != Verdict.Outcome.NONE) {
                counts.merge(r.outcome(), 1L, Long::sum);
            }
        }
        String head = "Targets: " + counts.getOrDefault(Verdict.Outcome.MET, 0L) + " met, "
                + counts.getOrDefault(Verdict.Outcome.MISSED, 0L) + " missed, "
                + counts.getOrDefault(Verdict.Outcome.INCONCLUSIVE, 0L) + " inconclusive, "
                + counts.getOrDefault(Verdict.Outcome.FAILED, 0L) + " failed";
        List<Row> notMet = rows.stream().filter(Row::notMet).toList();
        if (notMet.isEmpty()) {
            return head + "; all targets met.";
        }
        return head + ". **Not met (" + notMet.size() + "):** " + String.join("; ", notMet.stream().map(r -> r.metric()
                + (r.size() > 0 ? " " + Row.sizeText(r.size()) : "") + " (" + r.verdict() + ", ratio "
                + Row.fmt(r.ratio()) + (r.interval().known() ? " [" + r.intervalText() + "]" : "") + ", target "
                + r.targetText() + ")").toList()) + ".";
    }
}
