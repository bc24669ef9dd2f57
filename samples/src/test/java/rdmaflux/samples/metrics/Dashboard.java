package rdmaflux.samples.metrics;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** The Grafana dashboard shipped in {@code docs/dashboards/rdmaflux.json}, read for the tests. */
final class Dashboard {
    static final String FILE = "docs/dashboards/rdmaflux.json";

    /** A panel's query. */
    record Query(String panel, String expr) {
    }

    final Map<String, Object> json;

    private Dashboard(Map<String, Object> json) {
        this.json = json;
    }

    /** Finds the file from the working directory upwards (Maven runs in the module, scripts/it at the root). */
    static Dashboard load() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path f = dir.resolve(FILE);
            if (Files.isRegularFile(f)) {
                try {
                    return new Dashboard(Json.object(Json.parse(Files.readString(f))));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        throw new AssertionError(FILE + " not found above " + Path.of("").toAbsolutePath());
    }

    /** @return every non-row panel, nested row panels included */
    List<Map<String, Object>> panels() {
        List<Map<String, Object>> out = new ArrayList<>();
        collect(Json.array(json.get("panels")), out);
        return out;
    }

    private static void collect(List<Object> panels, List<Map<String, Object>> out) {
        for (Object o : panels) {
            Map<String, Object> p = Json.object(o);
            if ("row".equals(p.get("type"))) {
                if (p.get("panels") != null) {
                    collect(Json.array(p.get("panels")), out);
                }
            } else {
                out.add(p);
            }
        }
    }

    /** @return every panel query */
    List<Query> queries() {
        List<Query> out = new ArrayList<>();
        for (Map<String, Object> p : panels()) {
            for (Object t : Json.array(p.get("targets"))) {
                out.add(new Query((String) p.get("title"), (String) Json.object(t).get("expr")));
            }
        }
        return out;
    }

    /** @return the metric names of the panel queries and of the {@code label_values(metric, label)} variables */
    Set<String> metricNames() {
        Set<String> names = new TreeSet<>();
        for (Query q : queries()) {
            names.addAll(PromQl.metricNames(q.expr()));
        }
        for (Object v : Json.array(Json.object(json.get("templating")).get("list"))) {
            Object def = Json.object(v).get("definition");
            if (def instanceof String s && s.startsWith("label_values(")) {
                names.add(s.substring("label_values(".length(), s.indexOf(',')).strip());
            }
        }
        return names;
    }

    /** @return {@code expr} with Grafana's variables replaced so Prometheus can evaluate it */
    static String substitute(String expr) {
        return expr.replace("$__rate_interval", "1m").replace("$instance", ".*");
    }
}
