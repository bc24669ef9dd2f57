package rdmaflux.samples.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * The dashboard's structure on the host; whether its names are really exported is checked against a
 * live scrape by {@code PrometheusScrapeIT}.
 */
class DashboardTest {
    private final Dashboard dashboard = Dashboard.load();

    @Test
    void everyPanelQueriesRdmafluxMeters() {
        List<Map<String, Object>> panels = dashboard.panels();
        assertTrue(panels.size() >= 10, "panels: " + panels.size());
        Set<Object> ids = new HashSet<>();
        for (Map<String, Object> p : panels) {
            assertTrue(ids.add(p.get("id")), "duplicate panel id " + p.get("id"));
            List<Object> targets = Json.array(p.get("targets"));
            assertFalse(targets.isEmpty(), p.get("title") + " has no query");
            for (Object t : targets) {
                String expr = (String) Json.object(t).get("expr");
                Set<String> names = PromQl.metricNames(expr);
                assertFalse(names.isEmpty(), p.get("title") + ": no metric in " + expr);
                for (String n : names) {
                    assertTrue(n.startsWith("rdmaflux_"), p.get("title") + ": " + n);
                }
            }
            assertEquals("${datasource}", Json.object(p.get("datasource")).get("uid"), (String) p.get("title"));
        }
    }

    @Test
    void coversConnectionsThroughputLatencyAndErrors() {
        Set<String> names = dashboard.metricNames();
        for (String n : List.of("rdmaflux_connections_active", "rdmaflux_messages_sent_total",
                "rdmaflux_messages_sent_bytes_total", "rdmaflux_operation_latency_seconds_bucket",
                "rdmaflux_completion_errors_total", "rdmaflux_connects_total", "rdmaflux_credit_waits_total",
                "rdmaflux_port_hw_counter_total", "rdmaflux_port_state")) {
            assertTrue(names.contains(n), n + " not in " + names);
        }
        assertTrue(dashboard.queries().stream().anyMatch(q -> q.expr().startsWith("histogram_quantile(0.99")),
                "a p99 latency panel");
    }
}
