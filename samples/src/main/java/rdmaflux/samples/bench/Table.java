package rdmaflux.samples.bench;

import java.util.ArrayList;
import java.util.List;

/** Renders the result rows as an aligned text table and as Markdown. */
final class Table {
    private static final String[] HEADER = {"metric", "size", "unit", "ours", "C", "C tool", "ours/C", "target",
        "verdict", "alloc B/msg", "CPU us/msg ours", "CPU us/msg C", "note"};

    private Table() {
    }

    private static String[] cells(Row r) {
        return new String[] {r.metric(), Row.sizeText(r.size()), r.unit(), Row.fmt(r.ours()), Row.fmt(r.c()),
            r.cTool(), Row.fmt(r.ratio()), r.targetText(), r.verdict(), Row.fmt(r.allocPerMessage()),
            Row.fmt(r.cpuOurs()), Row.fmt(r.cpuC()), r.note()};
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
                boolean number = i >= 3 && i <= 6 || i >= 9 && i <= 11;
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
        sb.append("|---|---|---|--:|--:|---|--:|---|---|--:|--:|--:|---|\n");
        for (Row r : rows) {
            String[] c = cells(r);
            if (r.missed()) {
                c[8] = "**MISSED**";
            }
            for (int i = 0; i < c.length; i++) {
                c[i] = c[i].replace("|", "\\|");
            }
            sb.append("| ").append(String.join(" | ", c)).append(" |\n");
        }
        return sb.toString();
    }
}
