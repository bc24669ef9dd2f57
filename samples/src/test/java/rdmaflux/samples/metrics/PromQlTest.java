package rdmaflux.samples.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

/** The helpers of the dashboard check: name extraction must neither miss metrics nor invent them. */
class PromQlTest {

    @Test
    void namesWithoutFunctionsLabelsOrVariables() {
        assertEquals(Set.of("rdmaflux_operation_latency_seconds_bucket"), PromQl.metricNames(
                "histogram_quantile(0.99, sum by (le, op) (rate(rdmaflux_operation_latency_seconds_bucket"
                        + "{instance=~\"$instance\", op!=\"other\"}[$__rate_interval])))"));
        assertEquals(Set.of("rdmaflux_cq_completions_total", "rdmaflux_cq_polls_total"), PromQl.metricNames(
                "sum(rate(rdmaflux_cq_completions_total[5m])) / sum(rate(rdmaflux_cq_polls_total[5m]))"));
        assertEquals(Set.of("rdmaflux_connections_active"), PromQl.metricNames("rdmaflux_connections_active"));
        assertEquals(Set.of("a", "b"), PromQl.metricNames("a * on (instance) group_left(device) b offset 5m > 1e-3"));
        assertEquals(Set.of("rdmaflux_port_hw_counter_total"), PromQl.metricNames(
                "sum without (port) (increase(rdmaflux_port_hw_counter_total{counter=~\".*rnr.*\"}[${interval}]))"));
    }

    @Test
    void jsonReader() {
        Map<String, Object> o = Json.object(Json.parse(
                "{\"a\": [1, 2.5, -3e2], \"b\": {\"c\": \"x\\\"y\\u0041\"}, \"d\": true, \"e\": null}"));
        assertEquals(List.of(1.0, 2.5, -300.0), o.get("a"));
        assertEquals("x\"yA", Json.object(o.get("b")).get("c"));
        assertEquals(Boolean.TRUE, o.get("d"));
        assertEquals(null, o.get("e"));
        assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\": 1,}"));
        assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\": 1} x"));
    }
}
