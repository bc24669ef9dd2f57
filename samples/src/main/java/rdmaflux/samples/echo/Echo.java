package rdmaflux.samples.echo;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaServer;
import rdmaflux.verbs.Rdma;

/**
 * Send/receive echo over the reactive API ({@code rdmaflux.cm}) that makes flow control visible. The
 * client sends numbered messages as fast as the connection lets it and prints its send rate every
 * interval; the server echoes each one back. With {@code --slow-consumer MS} the server holds every
 * message for MS milliseconds before echoing and releasing it: unreleased messages are credits the client
 * does not get back, so the client's send rate drops to about one message per MS ms instead of
 * overrunning the server.
 *
 * <p>Without {@code --server}/{@code --client} both sides run in this process. On the Soft-RoCE sandbox,
 * from the project root after {@code ./mvnw -q install -DskipTests}:
 * <pre>{@code
 * scripts/sandbox/run -- $JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED \
 *     -cp samples/target/classes:$(cat samples/target/runtime-classpath.txt) \
 *     rdmaflux.samples.echo.Echo --duration 5 --slow-consumer 20
 * }</pre>
 */
@Command(name = "echo", mixinStandardHelpOptions = true,
        description = "Reactive send/receive echo; --slow-consumer shows the credit-based backpressure.")
public final class Echo implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public Echo() {
    }

    private static final Duration STEP = Duration.ofSeconds(30);

    @Spec
    CommandSpec spec;

    @Option(names = {"-a", "--address"}, description = "IP address of the RDMA interface the server binds and the "
            + "client connects to (default: $RDMAFLUX_SANDBOX_ADDR).")
    String address = System.getenv().getOrDefault("RDMAFLUX_SANDBOX_ADDR", "");

    @Option(names = {"-p", "--port"}, description = "RDMA CM port (default: ${DEFAULT-VALUE}).")
    int port = 7472;

    @Option(names = "--server", description = "Run only the server (until interrupted).")
    boolean serverOnly;

    @Option(names = "--client", description = "Run only the client.")
    boolean clientOnly;

    @Option(names = {"-t", "--duration"}, description = "Seconds the client sends (default: ${DEFAULT-VALUE}).")
    double duration = 5;

    @Option(names = {"-s", "--size"}, description = "Message size in bytes, at least 8 (default: ${DEFAULT-VALUE}).")
    int size = 64;

    @Option(names = "--slow-consumer", paramLabel = "MS",
            description = "Server side: consume one message per MS milliseconds (default: as fast as possible).")
    long slowConsumerMillis;

    @Option(names = {"-b", "--buffers"}, description = "Receive buffers per connection, i.e. the credits each side "
            + "grants (default: ${DEFAULT-VALUE}).")
    int buffers = 32;

    @Option(names = {"-w", "--warmup"}, description = "Messages sent one by one before the timed part, so class "
            + "loading and JIT compilation stay out of the rates (default: ${DEFAULT-VALUE}).")
    int warmup = 20;

    @Option(names = {"-i", "--interval"}, description = "Rate report interval in ms (default: ${DEFAULT-VALUE}).")
    long intervalMillis = 1000;

    private PrintWriter out;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new Echo()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!Rdma.isAvailable()) {
            err.println("echo: RDMA is not available: " + Rdma.unavailabilityCause().getMessage());
            err.flush();
            return 2;
        }
        if (address.isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--address is required outside the sandbox");
        }
        if (size < 8 || duration <= 0 || buffers < 1 || slowConsumerMillis < 0 || intervalMillis < 1 || warmup < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "need --size >= 8, --duration > 0, "
                    + "--buffers >= 1, --slow-consumer >= 0, --interval >= 1, --warmup >= 0");
        }
        if (serverOnly && clientOnly) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--server and --client exclude each other");
        }
        InetSocketAddress addr = new InetSocketAddress(InetAddress.getByName(address), port);
        ConnectionOptions options = ConnectionOptions.builder().receiveBuffers(buffers)
                .bufferSize(Math.max(size, 64)).build();
        if (clientOnly) {
            return client(addr, options);
        }
        RdmaServer server = RdmaServer.bind(addr, options, AcceptFilter.ACCEPT_ALL).block(STEP);
        CountDownLatch closed = new CountDownLatch(1);
        Disposable accepting = server.connections().subscribe(c -> serve(c, closed));
        say("server: listening on %s%s", server.address(), slowConsumerMillis > 0
                ? ", consuming one message per " + slowConsumerMillis + " ms" : "");
        try {
            if (serverOnly) {
                closed.await(); // a server runs until the process is stopped
                return 0;
            }
            int rc = client(addr, options);
            // The client has closed; the server side finishes echoing and prints its own summary first.
            closed.await(STEP.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
            return rc;
        } finally {
            accepting.dispose();
            server.disposeNow(STEP);
            out.flush();
        }
    }

    private void serve(RdmaConnection c, CountDownLatch closed) {
        say("server: connection from %s", c.remoteAddress());
        AtomicLong echoed = new AtomicLong();
        c.receive()
                .concatMap(m -> slowConsumerMillis > 0
                        ? Mono.delay(Duration.ofMillis(slowConsumerMillis)).then(Mono.defer(() -> echo(c, m)))
                        : echo(c, m), 1)
                .doOnNext(v -> echoed.incrementAndGet())
                .doFinally(s -> {
                    say("server: connection from %s closed (%s) after %d messages echoed", c.remoteAddress(), s,
                            echoed.get());
                    c.dispose();
                    closed.countDown();
                })
                .subscribe(null, e -> say("server: connection failed: %s", e));
    }

    /** Copies and releases the message (returning its credit to the client), then sends the copy back. */
    private static Mono<Boolean> echo(RdmaConnection c, RdmaMessage m) {
        ByteBuffer copy = ByteBuffer.wrap(m.toByteArray());
        m.release();
        return c.send(copy).thenReturn(Boolean.TRUE);
    }

    private int client(InetSocketAddress addr, ConnectionOptions options) throws InterruptedException {
        RdmaConnection c = RdmaConnection.connect(addr, options).block(STEP);
        say("client: connected to %s, sending %d-byte messages for %.1f s", c.remoteAddress(), size, duration);
        AtomicLong sent = new AtomicLong();
        AtomicLong echoed = new AtomicLong();
        AtomicReference<String> failure = new AtomicReference<>();
        Disposable echoes = c.receive().subscribe(m -> {
            try {
                long expected = echoed.get();
                if (!verify(m.asByteBuffer(), expected)) {
                    failure.compareAndSet(null, "echo " + expected + " carried the wrong data");
                }
                echoed.incrementAndGet();
            } finally {
                m.release();
            }
        }, e -> failure.compareAndSet(null, "receive failed: " + e));

        if (warmup > 0) {
            Flux.range(0, warmup).concatMap(i -> c.send(message(i, size))).then().block(STEP);
            awaitEchoes(echoed, warmup, failure, STEP.toMillis() + warmup * slowConsumerMillis);
            say("client: warmed up with %d messages", echoed.get());
        }
        long start = System.nanoTime();
        long deadline = start + (long) (duration * 1e9);
        long[] last = {0, echoed.get()};
        Disposable ticker = Flux.interval(Duration.ofMillis(intervalMillis)).subscribe(tick -> {
            long s = sent.get();
            long e = echoed.get();
            double secs = intervalMillis / 1000.0;
            say("client: %5.1f s: sent %.0f msg/s, echoed %.0f msg/s", (System.nanoTime() - start) / 1e9,
                    (s - last[0]) / secs, (e - last[1]) / secs);
            last[0] = s;
            last[1] = e;
        });
        Flux<ByteBuffer> messages = Flux.generate(() -> (long) warmup, (i, sink) -> {
            if (System.nanoTime() >= deadline) {
                sink.complete();
            } else {
                sink.next(message(i, size));
            }
            return i + 1;
        });
        try {
            // Up to sendBuffers sends in flight; each waits for a credit, so a slow server slows this down.
            messages.flatMapSequential(m -> c.send(m).doOnSuccess(v -> sent.incrementAndGet()),
                    options.sendBuffers()).then().block(Duration.ofSeconds((long) duration).plus(STEP));
        } finally {
            ticker.dispose();
        }
        long total = sent.get();
        double elapsed = (System.nanoTime() - start) / 1e9;
        say("client: sent %d messages of %d bytes in %.2f s: %.0f msg/s", total, size, elapsed, total / elapsed);
        // Echoes still in flight drain at the server's pace; allow for the buffers it may still hold.
        awaitEchoes(echoed, warmup + total, failure, STEP.toMillis() + (long) buffers * slowConsumerMillis);
        echoes.dispose();
        c.disposeNow(STEP);
        if (failure.get() != null) {
            say("client: FAILED: %s", failure.get());
            return 1;
        }
        if (echoed.get() != warmup + total) {
            say("client: FAILED: %d of %d echoes arrived", echoed.get(), warmup + total);
            return 1;
        }
        say("client: %d echoes verified", warmup + total);
        return 0;
    }

    private static void awaitEchoes(AtomicLong echoed, long count, AtomicReference<String> failure, long millis)
            throws InterruptedException {
        long until = System.nanoTime() + millis * 1_000_000;
        while (echoed.get() < count && failure.get() == null && System.nanoTime() < until) {
            Thread.sleep(5);
        }
    }

    /** A message: its sequence number, then bytes derived from it. */
    static ByteBuffer message(long seq, int size) {
        ByteBuffer b = ByteBuffer.allocate(size);
        b.putLong(seq);
        for (int j = 8; j < size; j++) {
            b.put((byte) (seq * 31 + j));
        }
        return b.flip();
    }

    static boolean verify(ByteBuffer b, long seq) {
        if (b.remaining() < 8 || b.getLong(b.position()) != seq) {
            return false;
        }
        for (int j = 8; j < b.remaining(); j++) {
            if (b.get(b.position() + j) != (byte) (seq * 31 + j)) {
                return false;
            }
        }
        return true;
    }

    private void say(String format, Object... args) {
        String line = String.format(format, args);
        synchronized (this) {
            out.println(line);
            out.flush();
        }
    }
}
