package rdmaflux.samples.metrics;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import rdmaflux.testing.RdmaTestEnv;

/**
 * End to end: the demo runs a known workload over real RDMA and serves its meters; a real Prometheus
 * server (the Debian package) scrapes it every second and answers PromQL with exactly the counts the
 * workload implies; and every metric the Grafana dashboard queries is one the demo really exports.
 */
class PrometheusScrapeIT {
    private static final Duration T = Duration.ofSeconds(180);
    private static final int MESSAGES = 300;
    private static final int SIZE = 1024;
    private static final int ONE_SIDED_EVERY = 10;
    /** The server's first message describes its buffer for the client's RDMA write/read. */
    private static final int DESCRIPTOR = 20;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @Test
    void prometheusScrapesTheDemoAndTheDashboardMatchesWhatIsExported() throws Exception {
        MetricsDemo demo = new MetricsDemo();
        new CommandLine(demo).parseArgs("--address", RdmaTestEnv.address().getHostAddress(), "--http-port", "0",
                "--messages", Integer.toString(MESSAGES), "--size", Integer.toString(SIZE), "--rate", "0",
                "--one-sided-every", Integer.toString(ONE_SIDED_EVERY));
        String device = RdmaTestEnv.device();
        try (MetricsDemo.Running running = demo.start()) {
            running.workload().block(T);
            assertEquals(MESSAGES, running.echoes());

            // 1. The endpoint itself.
            String text = get("http://127.0.0.1:" + running.httpPort() + "/metrics");
            Map<String, Double> samples = samples(text);
            long sent = 2L * MESSAGES + 1; // the client's messages, their echoes, the descriptor
            long bytes = 2L * MESSAGES * SIZE + DESCRIPTOR;
            long oneSided = (MESSAGES + ONE_SIDED_EVERY - 1) / ONE_SIDED_EVERY;
            assertEquals(sent, samples.get("rdmaflux_messages_sent_total"), text);
            assertEquals(bytes, samples.get("rdmaflux_messages_sent_bytes_total"));
            assertEquals(sent, samples.get("rdmaflux_messages_received_total"));
            assertEquals(bytes, samples.get("rdmaflux_messages_received_bytes_total"));
            assertEquals(sent, samples.get("rdmaflux_operation_latency_seconds_count{op=\"send\"}"));
            assertEquals(oneSided, samples.get("rdmaflux_operation_latency_seconds_count{op=\"write\"}"));
            assertEquals(oneSided, samples.get("rdmaflux_operation_latency_seconds_count{op=\"read\"}"));
            assertEquals(2, samples.get("rdmaflux_connections_active"));
            assertEquals(4, samples.get("rdmaflux_port_state{device=\"" + device + "\",port=\"1\"}"));

            // 2. The dashboard names only what the demo exports.
            Set<String> exported = new TreeSet<>();
            for (String key : samples.keySet()) {
                exported.add(key.contains("{") ? key.substring(0, key.indexOf('{')) : key);
            }
            Dashboard dashboard = Dashboard.load();
            Set<String> missing = new TreeSet<>(dashboard.metricNames());
            missing.removeAll(exported);
            assertTrue(missing.isEmpty(), "the dashboard queries metrics the application does not export: " + missing
                    + "\nexported: " + exported);

            // 3. A real Prometheus scrapes it.
            try (Prometheus prometheus = Prometheus.start(running.httpPort())) {
                String base = prometheus.url();
                awaitValue(base, "up{job=\"rdmaflux\"}", 1);
                awaitValue(base, "rdmaflux_messages_sent_total", sent);
                assertEquals(bytes, query(base, "sum(rdmaflux_messages_received_bytes_total)"));
                assertEquals(oneSided, query(base, "sum(rdmaflux_operation_latency_seconds_count{op=\"write\"})"));
                assertEquals(2, query(base, "rdmaflux_connections_active"));
                assertEquals(1, query(base, "sum(rdmaflux_connects_total{outcome=\"success\"})"));
                assertEquals(1, query(base, "sum(rdmaflux_accepts_total{outcome=\"success\"})"));
                assertEquals(4, query(base, "rdmaflux_port_state{device=\"" + device + "\"}"));
                assertEquals(0, query(base, "sum(rdmaflux_completion_errors_total)"));
                double p99 = query(base, "histogram_quantile(0.99, sum by (le) "
                        + "(rdmaflux_operation_latency_seconds_bucket{op=\"send\"}))");
                assertTrue(p99 > 0 && p99 <= 1, "p99 send latency " + p99 + " s");
                // Every dashboard query is valid PromQL for this server.
                for (Dashboard.Query q : dashboard.queries()) {
                    Map<String, Object> answer = Json.object(Json.parse(get(base + "/api/v1/query?query="
                            + URLEncoder.encode(Dashboard.substitute(q.expr()), StandardCharsets.UTF_8))));
                    assertEquals("success", answer.get("status"), q.panel() + ": " + q.expr() + " -> " + answer);
                }
            }
        }
    }

    /** Exposition lines to values, keyed by name and labels as printed. */
    private static Map<String, Double> samples(String text) {
        Map<String, Double> out = new HashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            out.put(line.substring(0, space), Double.valueOf(line.substring(space + 1)));
        }
        return out;
    }

    private String get(String url) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException(url + " -> HTTP " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    /**
     * @return the single value of an instant query. A scrape that outlasts its 1 s timeout on a slow machine
     *         marks every series of the target stale until the next one lands, so a query with no result
     *         is asked again, for at most {@link #T}.
     */
    private double query(String base, String promql) {
        List<Object> result = await().atMost(T).pollInterval(Duration.ofMillis(500))
                .until(() -> results(base, promql), r -> !r.isEmpty());
        assertEquals(1, result.size(), promql + " -> " + result);
        return Double.parseDouble((String) Json.array(Json.object(result.getFirst()).get("value")).get(1));
    }

    private List<Object> results(String base, String promql) throws IOException, InterruptedException {
        Map<String, Object> answer = Json.object(Json.parse(get(base + "/api/v1/query?query="
                + URLEncoder.encode(promql, StandardCharsets.UTF_8))));
        assertEquals("success", answer.get("status"), promql + " -> " + answer);
        return Json.array(Json.object(answer.get("data")).get("result"));
    }

    /** Waits for the first scrapes to land. */
    private void awaitValue(String base, String promql, double expected) {
        await().atMost(T).pollInterval(Duration.ofMillis(500))
                .untilAsserted(() -> assertEquals(expected, query(base, promql), promql));
    }

    /** A Prometheus server process with its own configuration and storage in a temporary directory. */
    private record Prometheus(Process process, Path dir, int port) implements AutoCloseable {

        static Prometheus start(int target) throws Exception {
            Path dir = Files.createTempDirectory("rdmaflux-prometheus");
            Files.writeString(dir.resolve("prometheus.yml"), """
                    global:
                      scrape_interval: 1s
                      evaluation_interval: 1s
                    scrape_configs:
                      - job_name: rdmaflux
                        scrape_interval: 1s
                        scrape_timeout: 1s
                        static_configs:
                          - targets: ['127.0.0.1:%d']
                    """.formatted(target));
            int port;
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = s.getLocalPort();
            }
            Process p = new ProcessBuilder("prometheus",
                    "--config.file=" + dir.resolve("prometheus.yml"),
                    "--storage.tsdb.path=" + dir.resolve("data"),
                    "--web.listen-address=127.0.0.1:" + port)
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("prometheus.log").toFile())
                    .start();
            Prometheus prometheus = new Prometheus(p, dir, port);
            HttpClient client = HttpClient.newHttpClient();
            long deadline = System.nanoTime() + T.toNanos();
            for (;;) {
                if (!p.isAlive()) {
                    throw new AssertionError("prometheus exited with " + p.exitValue() + ":\n" + prometheus.log());
                }
                try {
                    HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(prometheus.url()
                            + "/-/ready")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() == 200) {
                        return prometheus;
                    }
                } catch (IOException notYet) {
                    // not listening yet
                }
                if (System.nanoTime() > deadline) {
                    prometheus.close();
                    throw new AssertionError("prometheus not ready after " + T + ":\n" + prometheus.log());
                }
                Thread.sleep(250);
            }
        }

        String url() {
            return "http://127.0.0.1:" + port;
        }

        String log() {
            try {
                return Files.readString(dir.resolve("prometheus.log"));
            } catch (IOException e) {
                return "(no log: " + e + ")";
            }
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
