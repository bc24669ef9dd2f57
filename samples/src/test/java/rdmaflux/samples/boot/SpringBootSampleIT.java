package rdmaflux.samples.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.messaging.rsocket.RSocketRequester;
import reactor.test.StepVerifier;

import rdmaflux.cm.RdmaLoops;
import rdmaflux.metrics.autoconfigure.RdmaClientTransports;
import rdmaflux.samples.metrics.Json;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The Spring Boot sample started with {@code SpringApplication}: its {@code @MessageMapping} routes answer
 * over RDMA (request-response and a stream, from an {@code RSocketRequester} whose transport is RDMA), the
 * actuator shows rdmaflux's meters and the RDMA port's health, and closing the context ends the loops.
 *
 * <p>One application for all the tests, started in {@code @BeforeAll}: under the sandbox's emulated CPU,
 * starting it takes minutes, and each lifecycle method has a timeout of its own.
 */
class SpringBootSampleIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private static String ip;
    private static ConfigurableApplicationContext context;
    private static RdmaLoops loops;
    private static RSocketRequester requester;
    private static int httpPort;
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();

    @BeforeAll
    static void startTheApplication() {
        ip = RdmaTestEnv.address().getHostAddress();
        long t0 = System.nanoTime();
        context = BootSample.application().run(
                "--rdmaflux.rsocket.server.address=" + ip,
                "--rdmaflux.rsocket.server.port=0",
                "--rdmaflux.loops.thread-prefix=boot-it",
                "--server.port=0",
                "--server.address=127.0.0.1");
        System.out.printf("SpringBootSampleIT: the application started in %.1f s%n", (System.nanoTime() - t0) / 1e9);
        loops = context.getBean(RdmaLoops.class);
        int rsocketPort = Integer.parseInt(context.getEnvironment().getRequiredProperty("local.rsocket.server.port"));
        httpPort = Integer.parseInt(context.getEnvironment().getRequiredProperty("local.server.port"));
        requester = context.getBean(RSocketRequester.Builder.class)
                .transport(context.getBean(RdmaClientTransports.class).create(ip, rsocketPort));
    }

    @AfterAll
    static void closingTheContextEndsTheLoops() {
        if (requester != null) {
            requester.dispose();
        }
        if (context == null) {
            return;
        }
        context.close();
        assertTrue(loops.isDisposed(), "closing the context disposes the loops");
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("boot-it-") && t.isAlive()),
                "closing the context waits for the loops' threads");
    }

    @Test
    void requestResponseAndStreamOverRdma() {
        assertEquals("hello, Boot", requester.route("greet").data("Boot").retrieveMono(String.class).block(TIMEOUT));
        StepVerifier.create(requester.route("count").data("5").retrieveFlux(String.class), 2)
                .expectNext("item 1 of 5", "item 2 of 5")
                .thenRequest(3)
                .expectNext("item 3 of 5", "item 4 of 5", "item 5 of 5")
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void prometheusShowsRdmafluxMeters() throws Exception {
        assertEquals("hello, meters", requester.route("greet").data("meters").retrieveMono(String.class).block(TIMEOUT));
        String prometheus = get("/actuator/prometheus");
        assertTrue(counter(prometheus, "rdmaflux_messages_sent_total") > 0, prometheus);
        assertTrue(counter(prometheus, "rdmaflux_messages_received_total") > 0, prometheus);
        assertTrue(prometheus.contains("rdmaflux_port_state{"), "the device meters are bound: " + prometheus);
    }

    @Test
    void healthShowsTheActivePort() throws Exception {
        Map<String, Object> components = Json.object(Json.object(Json.parse(get("/actuator/health"))).get("components"));
        Map<String, Object> rdma = Json.object(components.get("rdma"));
        assertEquals("UP", rdma.get("status"), rdma.toString());
        Map<String, Object> device = Json.object(Json.object(Json.object(rdma.get("details")).get("devices"))
                .get(RdmaTestEnv.device()));
        Map<String, Object> port = Json.object(Json.object(device.get("ports")).get("1"));
        assertEquals("ACTIVE", port.get("state"), rdma.toString());
        assertNotNull(port.get("activeMtu"), rdma.toString());
    }

    private static String get(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
                .timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), path + ": " + r.body());
        return r.body();
    }

    /** The sum of a counter's series in a Prometheus text exposition. */
    private static double counter(String exposition, String name) {
        return exposition.lines().filter(l -> l.startsWith(name + "{") || l.startsWith(name + " "))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }
}
