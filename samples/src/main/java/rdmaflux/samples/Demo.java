package rdmaflux.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * The README's demo of the reactive API: a server and a client in this process connect over RDMA,
 * bounce a few messages, the client RDMA-writes into and RDMA-reads from memory the server
 * registered, and the metrics the connections recorded are printed.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Connect, ping-pong, RDMA write/read and metrics with the reactive API.")
public final class Demo implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public Demo() {
    }

    private static final Duration T = Duration.ofSeconds(60);

    @Option(names = {"-a", "--address"}, description = "IP address of the RDMA interface. "
            + "Default: $RDMAFLUX_SANDBOX_ADDR, else the address of the first active RDMA port.")
    String address = "";

    @Option(names = {"-C", "--count"}, description = "Ping-pongs (default: ${DEFAULT-VALUE}).")
    int count = 5;

    /**
     * Runs the demo.
     *
     * @param args command line
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new Demo()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        address = Samples.address("demo", address);
        if (address == null) {
            return Samples.CANNOT_RUN;
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ConnectionOptions options = ConnectionOptions.builder()
                .recorder(MicrometerRdmaRecorder.of(registry)).build();
        try (Arena arena = Arena.ofShared()) {
            // The server's memory the client will write into and read from.
            RegisteredBuffer[] shared = new RegisteredBuffer[1];
            RdmaServer server = RdmaServer.bind(new InetSocketAddress(InetAddress.getByName(address), 0), options,
                    AcceptFilter.ACCEPT_ALL).block(T);
            server.connections().subscribe(conn -> {
                shared[0] = conn.register(arena.allocate(4096, 8), AccessFlags.REMOTE_ALL);
                ByteBuffer desc = ByteBuffer.allocate(RemoteBuffer.ENCODED_SIZE);
                shared[0].remote().writeTo(desc);
                // First the descriptor, then an echo of every message.
                conn.send(desc.flip()).thenMany(conn.receive().concatMap(m -> {
                    ByteBuffer copy = ByteBuffer.wrap(m.toByteArray());
                    m.release();
                    return conn.send(copy);
                })).subscribe(null, e -> { });
            });
            System.out.println("server: listening on " + server.address());

            long t0 = System.nanoTime();
            RdmaConnection client = RdmaConnection.connect(server.address(), options).block(T);
            System.out.printf("client: connected to %s in %.1f ms%n", client.remoteAddress(),
                    (System.nanoTime() - t0) / 1e6);
            // The demo is sequential, so replies go to a queue it takes from in order.
            BlockingQueue<byte[]> replies = new LinkedBlockingQueue<>();
            client.receiveBytes().subscribe(replies::add);
            RemoteBuffer remote = RemoteBuffer.readFrom(ByteBuffer.wrap(take(replies)));
            System.out.println("client: server memory at 0x" + Long.toHexString(remote.address()) + " rkey 0x"
                    + Integer.toHexString(remote.rkey()));

            for (int i = 1; i <= count; i++) {
                String ping = "ping " + i;
                long start = System.nanoTime();
                client.send(ByteBuffer.wrap(ping.getBytes(StandardCharsets.US_ASCII))).block(T);
                byte[] pong = take(replies);
                String got = new String(pong, StandardCharsets.US_ASCII);
                System.out.printf("client: %s -> %s in %.1f us%n", ping, got, (System.nanoTime() - start) / 1e3);
                if (!got.equals(ping)) {
                    System.err.println("client: wrong echo");
                    return 1;
                }
            }

            RegisteredBuffer local = client.register(arena.allocate(4096, 8), AccessFlags.LOCAL_WRITE);
            local.segment().setString(0, "written by RDMA WRITE", StandardCharsets.US_ASCII);
            client.write(local.slice(0, 64), remote.slice(0, 64)).block(T);
            System.out.println("client: RDMA write done; server memory now says: \""
                    + shared[0].segment().getString(0, StandardCharsets.US_ASCII) + "\"");
            shared[0].segment().set(ValueLayout.JAVA_LONG, 1024, 0x5EED_CAFEL);
            client.read(local.slice(1024, 8), remote.slice(1024, 8)).block(T);
            long read = local.segment().get(ValueLayout.JAVA_LONG, 1024);
            System.out.println("client: RDMA read got 0x" + Long.toHexString(read));
            if (read != 0x5EED_CAFEL) {
                return 1;
            }

            client.disposeNow(T);
            // The server-side registration before the arena frees its memory: the client held its rkey, and
            // the accepted connection (which would close it) is closing on its own, asynchronously.
            shared[0].close();
            server.disposeNow(T);
            System.out.println("metrics:");
            // Histogram buckets are for Prometheus; the counts, totals and maxima tell the story here.
            for (Meter m : registry.getMeters().stream().filter(x -> !x.getId().getName().endsWith(".histogram"))
                    .sorted(java.util.Comparator.comparing((Meter x) -> x.getId().getName())
                            .thenComparing(x -> x.getId().getTags().toString())).toList()) {
                for (var measurement : m.measure()) {
                    if (measurement.getValue() != 0 && !Double.isNaN(measurement.getValue())) {
                        System.out.printf("  %-45s %-12s %s%n", m.getId().getName() + tags(m),
                                measurement.getStatistic().name().toLowerCase(), format(measurement.getValue()));
                    }
                }
            }
            return 0;
        }
    }

    private static byte[] take(BlockingQueue<byte[]> q) throws InterruptedException {
        byte[] b = q.poll(T.toSeconds(), TimeUnit.SECONDS);
        if (b == null) {
            throw new IllegalStateException("no reply within " + T);
        }
        return b;
    }

    private static String tags(Meter m) {
        return m.getId().getTags().isEmpty() ? "" : m.getId().getTags().toString()
                .replace("tag(", "").replace(")", "");
    }

    private static String format(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : String.format("%.6g", v);
    }
}
