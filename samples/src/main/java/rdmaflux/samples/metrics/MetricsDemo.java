package rdmaflux.samples.metrics;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.metrics.RdmaDeviceMetrics;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.samples.Samples;
import rdmaflux.verbs.RemoteBuffer;

/**
 * Exposes rdmaflux's Micrometer meters to Prometheus while a small RDMA workload runs: a server and a
 * client in this process, on one RDMA address. The client sends messages that the server echoes back,
 * and every few messages writes and reads back a buffer the server registered for it; the meters
 * (see {@code docs/metrics.md}) are served as Prometheus text at {@code http://HOST:PORT/metrics} by
 * the JDK's own HTTP server.
 */
@Command(name = "metrics-demo", mixinStandardHelpOptions = true,
        description = {"Runs an RDMA echo workload (client and server in this process) and serves its Micrometer "
                + "meters for Prometheus at http://<http-host>:<http-port>/metrics.",
                "Stop it with Ctrl-C, or with --linger."})
public final class MetricsDemo implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public MetricsDemo() {
    }

    private static final Duration T = Duration.ofSeconds(60);
    /** The server's first message: its buffer's address, length and rkey. */
    private static final int DESCRIPTOR = 20;
    private static final int ONE_SIDED_BYTES = 4096;

    @Option(names = {"-a", "--address"}, description = "IP address of the RDMA interface; client and server use it. "
            + "Default: $RDMAFLUX_SANDBOX_ADDR, else the address of the first active RDMA port.")
    String address = "";

    @Option(names = {"-p", "--port"}, description = "RDMA CM port of the server; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--http-host", description = "Address the metrics endpoint binds (default: ${DEFAULT-VALUE}).")
    String httpHost = "127.0.0.1";

    @Option(names = "--http-port", description = "Port of the metrics endpoint; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int httpPort = 9464;

    @Option(names = {"-n", "--messages"}, description = "Messages the client sends; 0 = until stopped (default: ${DEFAULT-VALUE}).")
    long messages = 100_000;

    @Option(names = {"-S", "--size"}, description = "Message size in bytes, at most 8192 (default: ${DEFAULT-VALUE}).")
    int size = 4096;

    @Option(names = {"-r", "--rate"}, description = "Messages per second; 0 = as fast as the echoes come back "
            + "(default: ${DEFAULT-VALUE}).")
    int rate = 1000;

    @Option(names = "--one-sided-every", description = "An RDMA write and read of 4 KiB after every Nth message; "
            + "0 = never (default: ${DEFAULT-VALUE}).")
    int oneSidedEvery = 10;

    @Option(names = "--linger", description = "Seconds to keep serving metrics after the workload; "
            + "-1 = until stopped (default: ${DEFAULT-VALUE}).")
    int linger = -1;

    /**
     * Runs the demo.
     *
     * @param args command line; {@code --help} lists the options
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new MetricsDemo()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        address = Samples.address("metrics", address);
        if (address == null) {
            return Samples.CANNOT_RUN;
        }
        try (Running running = start()) {
            Thread main = Thread.currentThread();
            AtomicBoolean exiting = new AtomicBoolean();
            Thread hook = new Thread(() -> {
                exiting.set(true);
                main.interrupt();
            });
            Runtime.getRuntime().addShutdownHook(hook);
            System.out.println("metrics at http://" + httpHost + ":" + running.httpPort() + "/metrics");
            System.out.println("workload: " + (messages == 0 ? "unlimited" : messages) + " messages of " + size
                    + " bytes" + (rate > 0 ? " at " + rate + "/s" : "") + " over " + running.rdmaAddress());
            try {
                running.workload().block();
                System.out.println("workload done: " + running.echoes() + " echoes");
                if (linger >= 0) {
                    Thread.sleep(Duration.ofSeconds(linger));
                } else {
                    Thread.sleep(Long.MAX_VALUE);
                }
            } catch (RuntimeException | InterruptedException e) {
                if (!exiting.get() && !(e instanceof InterruptedException)) {
                    throw e;
                }
            }
            if (!exiting.get()) {
                Runtime.getRuntime().removeShutdownHook(hook);
            }
        }
        return 0;
    }

    /**
     * Starts the metrics endpoint, the server and the client; the workload starts at once.
     *
     * @return the running demo, to close when done
     * @throws IOException when the HTTP port cannot be bound
     */
    public Running start() throws IOException {
        if (size < 1 || size > ConnectionOptions.defaults().bufferSize()) {
            throw new IllegalArgumentException("--size must be 1.." + ConnectionOptions.defaults().bufferSize());
        }
        return new Running(this);
    }

    /** The demo while it runs: the registry, the endpoint, both connections. */
    public static final class Running implements AutoCloseable {
        private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        private final RdmaDeviceMetrics devices = new RdmaDeviceMetrics();
        private final ExecutorService httpThread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "metrics-http");
            t.setDaemon(true);
            return t;
        });
        private final Arena arena = Arena.ofShared();
        private final Disposable.Composite subscriptions = Disposables.composite();
        private final CopyOnWriteArrayList<RdmaConnection> accepted = new CopyOnWriteArrayList<>();
        private final AtomicLong echoes = new AtomicLong();
        private final HttpServer http;
        private final RdmaServer server;
        private final RdmaConnection client;
        private final Mono<Void> workload;

        Running(MetricsDemo d) throws IOException {
            MicrometerRdmaRecorder recorder = MicrometerRdmaRecorder.of(registry);
            devices.bindTo(registry);
            http = HttpServer.create(new InetSocketAddress(InetAddress.getByName(d.httpHost), d.httpPort), 16);
            http.createContext("/metrics", this::scrape);
            http.createContext("/", Running::index);
            http.setExecutor(httpThread);
            http.start();
            try {
                ConnectionOptions options = ConnectionOptions.builder().recorder(recorder).build();
                server = RdmaServer.bind(new InetSocketAddress(InetAddress.getByName(d.address), d.port), options,
                        AcceptFilter.ACCEPT_ALL).block(T);
                subscriptions.add(server.connections().subscribe(this::serve));
                client = RdmaConnection.connect(server.address(), options).block(T);
                workload = startClient(d);
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        /** Server side: hand the client a buffer for its one-sided operations, then echo every message. */
        private void serve(RdmaConnection c) {
            accepted.add(c);
            RegisteredBuffer buffer = c.register(arena.allocate(ONE_SIDED_BYTES, 64), AccessFlags.REMOTE_ALL);
            RemoteBuffer r = buffer.remote();
            ByteBuffer descriptor = ByteBuffer.allocate(DESCRIPTOR).putLong(r.address()).putLong(r.length())
                    .putInt(r.rkey()).flip();
            subscriptions.add(c.send(descriptor)
                    .thenMany(c.receive().concatMap(m -> {
                        ByteBuffer copy = ByteBuffer.wrap(m.toByteArray());
                        m.release();
                        return c.send(copy);
                    }, 0))
                    .subscribe(null, e -> { }));
        }

        private Mono<Void> startClient(MetricsDemo d) {
            Sinks.One<RemoteBuffer> peer = Sinks.one();
            Sinks.Empty<Void> allEchoed = Sinks.empty();
            long n = d.messages == 0 ? Long.MAX_VALUE : d.messages;
            AtomicBoolean first = new AtomicBoolean(true);
            subscriptions.add(client.receive().subscribe(m -> {
                try {
                    if (first.compareAndSet(true, false)) {
                        ByteBuffer b = m.asByteBuffer();
                        peer.tryEmitValue(new RemoteBuffer(b.getLong(), b.getLong(), b.getInt()));
                    } else if (echoes.incrementAndGet() == n) {
                        allEchoed.tryEmitEmpty();
                    }
                } finally {
                    m.release();
                }
            }, allEchoed::tryEmitError));
            RegisteredBuffer local = client.register(arena.allocate(ONE_SIDED_BYTES, 64), AccessFlags.LOCAL_WRITE);
            byte[] payload = new byte[d.size];
            Flux<Long> ticks = d.rate > 0
                    ? Flux.interval(Duration.ofNanos(1_000_000_000L / d.rate)).onBackpressureDrop().take(n)
                    : Flux.range(0, Integer.MAX_VALUE).map(Integer::longValue).take(n);
            Mono<Void> sends = peer.asMono().flatMapMany(remote -> ticks.concatMap(i -> {
                payload[0] = (byte) i.longValue();
                Mono<Void> one = client.send(ByteBuffer.wrap(payload.clone()));
                if (d.oneSidedEvery > 0 && i % d.oneSidedEvery == 0) {
                    one = one.then(client.write(local, remote)).then(client.read(local, remote));
                }
                return one;
            }, 1)).then();
            Mono<Void> w = sends.then(allEchoed.asMono()).cache();
            subscriptions.add(w.subscribe(null, e -> { }));
            return w;
        }

        private void scrape(HttpExchange x) throws IOException {
            try (x) {
                if (!"GET".equals(x.getRequestMethod()) && !"HEAD".equals(x.getRequestMethod())) {
                    x.sendResponseHeaders(405, -1);
                    return;
                }
                byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
                x.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                if ("HEAD".equals(x.getRequestMethod())) {
                    x.sendResponseHeaders(200, -1);
                    return;
                }
                x.sendResponseHeaders(200, body.length);
                try (OutputStream out = x.getResponseBody()) {
                    out.write(body);
                }
            }
        }

        private static void index(HttpExchange x) throws IOException {
            try (x) {
                if (!"/".equals(x.getRequestURI().getPath())) {
                    x.sendResponseHeaders(404, -1);
                    return;
                }
                byte[] body = "rdmaflux metrics demo: see /metrics\n".getBytes(StandardCharsets.UTF_8);
                x.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
                x.sendResponseHeaders(200, body.length);
                try (OutputStream out = x.getResponseBody()) {
                    out.write(body);
                }
            }
        }

        /** {@return the port the metrics endpoint listens on} */
        public int httpPort() {
            return http.getAddress().getPort();
        }

        /** {@return the server's RDMA address} */
        public InetSocketAddress rdmaAddress() {
            return server.address();
        }

        /** {@return the registry the endpoint serves} */
        public PrometheusMeterRegistry registry() {
            return registry;
        }

        /** {@return completes when every message has been echoed (never with {@code --messages 0})} */
        public Mono<Void> workload() {
            return workload;
        }

        /** {@return echoes received so far} */
        public long echoes() {
            return echoes.get();
        }

        /** Stops the workload, closes both connections, the server, the endpoint and the device contexts. */
        @Override
        public void close() {
            subscriptions.dispose();
            if (client != null) {
                client.disposeNow(T);
            }
            for (RdmaConnection c : accepted) {
                c.dispose();
                c.onDispose().block(T);
            }
            if (server != null) {
                server.disposeNow(T);
            }
            http.stop(0);
            httpThread.shutdownNow();
            devices.close();
            arena.close();
            registry.close();
        }
    }
}
