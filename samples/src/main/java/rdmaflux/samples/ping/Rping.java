package rdmaflux.samples.ping;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;
import java.util.function.Consumer;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Mono;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.verbs.Rdma;

/**
 * {@code rping} from rdma-core, on rdmaflux's reactive API: it talks to the real {@code rping} as client
 * or server, and to itself.
 *
 * <h2>The rping protocol (rdma-core {@code librdmacm/examples/rping.c}, v44)</h2>
 *
 * <p><b>Connection.</b> Plain RDMA CM in the TCP port space, default port 7174. The server binds to
 * {@code -a} (the IPv4 wildcard when omitted) and listens; the client resolves address and route and
 * connects asking for one outstanding RDMA read in each direction (responder resources = initiator
 * depth = 1) and the maximum retry and RNR retry counts (7). Neither side sends private data: the
 * server accepts without parameters, echoing what the client asked for. Each side has one RC queue
 * pair whose receive queue holds exactly one 16-byte receive, re-posted as soon as a message lands,
 * so the protocol is strictly lock-step: never more than one message in flight in either direction.
 *
 * <p><b>The message.</b> There is only one: {@code struct rping_rdma_info { __be64 buf; __be32 rkey;
 * __be32 size; }}, 16 bytes, big-endian ({@link RpingInfo}). The client sends it to advertise a buffer
 * (address, rkey, length). The server sends it as "go ahead", with a send buffer it never fills
 * (zeros), so only its arrival counts. A message of any other length is "bogus data" and ends the run.
 *
 * <p><b>Buffers.</b> The client has two buffers of {@code -S} bytes, the source (remote-readable) and
 * the sink (remote-writable); the server has one buffer of its own {@code -S} bytes.
 *
 * <p><b>One iteration, ping {@code n} from 0.</b>
 * <ol>
 * <li>The client writes the ping into its source: {@code "rdma-ping-n: "}, then ASCII letters counting
 *     up from {@code 'A' + n mod 58} and wrapping from {@code 'z'} back to {@code 'A'}, with a NUL in
 *     the last byte ({@link PingData}). It advertises the source with {@code size = -S}.</li>
 * <li>The server RDMA-reads {@code size} bytes of the source into its buffer (so its own {@code -S}
 *     must be at least the client's), prints {@code "server ping data: <text>"} with {@code -v}, and
 *     sends "go".</li>
 * <li>The client advertises its sink, again with {@code size = -S}.</li>
 * <li>The server RDMA-writes the ping's C string including the NUL ({@code strlen + 1} bytes, which is
 *     all {@code -S} bytes for rping's data) into the sink, waits for the write to complete, and sends
 *     "go".</li>
 * <li>The client, with {@code -V}, compares source and sink over all {@code -S} bytes ("data
 *     mismatch" ends the run with an error), and prints {@code "ping data: <text>"} with {@code -v}.</li>
 * </ol>
 *
 * <p><b>Ending.</b> The client stops after {@code -C} pings (0, the default, means forever) and
 * disconnects. The server ignores {@code -C}: it loops until the DISCONNECTED event, then disconnects
 * too and exits 0 (rping prints "server DISCONNECT EVENT..." and "wait for RDMA_READ_ADV state 10" to
 * stderr on the way; that is its normal exit). Without {@code -P} the server serves one connection and
 * exits; with {@code -P} it serves every connection in parallel until killed. rping's server ignores
 * {@code -V}; sizes range from 26 bytes (the prefix with the largest int, plus its NUL) to 65535.
 *
 * <h2>This implementation</h2>
 *
 * <p>The same flags with the same meaning, and: {@code -V} on the server checks each ping it reads
 * against rping's pattern, so the data is verified in both directions; {@code -C} on the server is
 * the number of pings expected, and the exit status is 1 if the client left after a different number;
 * with neither {@code -s} nor {@code -c}, a server and a client run in this process. Not supported:
 * {@code -I} (source address; the reactive connect has no such parameter), {@code -q} (a self-made QP
 * is an rping implementation detail), {@code -d}. It uses {@link ConnectionOptions.Protocol#RAW}: plain
 * SENDs, no rdmaflux header, credits or private data.
 */
@Command(name = "rping", sortOptions = false, usageHelpAutoWidth = true,
        description = "rdma-core's rping over rdmaflux: interoperates with rping -s / rping -c.",
        footer = {"", "Exit status: 0 success, 1 protocol or data error, 2 bad usage or no RDMA."})
public final class Rping implements Callable<Integer> {
    /** rping's default port. */
    public static final int DEFAULT_PORT = 7174;

    @Option(names = "-s", description = "Server side.")
    boolean server;

    @Option(names = "-c", description = "Client side.")
    boolean client;

    @Option(names = "-a", paramLabel = "addr", description = "Address: the server's to connect to, or the one "
            + "to listen on (server default: any). Default here: $RDMAFLUX_SANDBOX_ADDR if set.")
    String address = System.getenv().getOrDefault("RDMAFLUX_SANDBOX_ADDR", "");

    @Option(names = "-p", paramLabel = "port", description = "Port (default: ${DEFAULT-VALUE}).")
    int port = DEFAULT_PORT;

    @Option(names = "-C", paramLabel = "count", description = "Ping count; 0 = until interrupted (default: "
            + "${DEFAULT-VALUE}). On a server: the count expected per connection.")
    int count;

    @Option(names = "-S", paramLabel = "size", description = "Ping data size, " + PingData.MIN_SIZE + " to "
            + PingData.MAX_SIZE + " (default: ${DEFAULT-VALUE}). Use the same on both sides.")
    int size = RpingSettings.DEFAULT_SIZE;

    @Option(names = "-v", description = "Display ping data to stdout.")
    boolean verbose;

    @Option(names = "-V", description = "Validate ping data (on a server too, unlike rping).")
    boolean validate;

    @Option(names = "-P", description = "Persistent server: serve every connection, until interrupted.")
    boolean persistent;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;

    private final PrintStream stdout;
    private final PrintStream stderr;

    /** A command printing to the process's stdout and stderr. */
    public Rping() {
        this(System.out, System.err);
    }

    Rping(PrintStream stdout, PrintStream stderr) {
        this.stdout = stdout;
        this.stderr = stderr;
    }

    /**
     * Runs the command.
     *
     * @param args rping's flags
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new Rping()).execute(args));
    }

    /**
     * The options of every rping connection, both sides: {@link ConnectionOptions.Protocol#RAW} (rping
     * knows no header or credits), small buffers (rping's messages are 16 bytes; 64 leaves room to
     * report a bogus longer one instead of failing the receive), rping's send queue depth.
     *
     * @return the options
     */
    public static ConnectionOptions connectionOptions() {
        return ConnectionOptions.builder()
                .protocol(ConnectionOptions.Protocol.RAW)
                .bufferSize(64)
                .receiveBuffers(4)
                .sendBuffers(4)
                .sendQueueDepth(16)
                .build();
    }

    @Override
    public Integer call() throws Exception {
        RpingSettings settings;
        try {
            settings = new RpingSettings(size, count, verbose, validate);
        } catch (IllegalArgumentException e) {
            stderr.println("rping: " + e.getMessage());
            return 2;
        }
        if (server && client) {
            stderr.println("rping: -s and -c are exclusive");
            return 2;
        }
        if (persistent && !server) {
            stderr.println("rping: -P is for servers (-s)");
            return 2;
        }
        if (address.isEmpty() && !server) {
            stderr.println("rping: -a addr is required" + (client ? "" : " (or run in the sandbox)"));
            return 2;
        }
        if (!Rdma.isAvailable()) {
            stderr.println("rping: RDMA is not available: " + Rdma.unavailabilityCause().getMessage());
            return 2;
        }
        InetSocketAddress addr = new InetSocketAddress(
                address.isEmpty() ? InetAddress.getByName("0.0.0.0") : InetAddress.getByName(address), port);
        Consumer<String> out = line -> {
            synchronized (stdout) {
                stdout.println(line);
            }
        };
        try {
            if (client) {
                return report("client", RpingClient.run(addr, settings, out).block());
            }
            try (RpingServer s = RpingServer.bind(addr, settings, out).block()) {
                if (server && persistent) {
                    s.serveAll(e -> stderr.println("rping: connection failed: " + describe(e)))
                            .doOnNext(r -> report("server", r)).blockLast();
                    return 0;
                }
                if (server) {
                    return report("server", s.serveOne().block());
                }
                // Both sides here: subscribe the server first so the client's connection finds a taker.
                var served = s.serveOne().toFuture();
                int c = report("client", RpingClient.run(addr, settings, out).block());
                int v = report("server", Mono.fromFuture(served).block());
                return Math.max(c, v);
            }
        } catch (RuntimeException e) {
            stderr.println("rping: " + describe(e));
            return 1;
        }
    }

    /** Prints the summary to stderr (stdout stays rping's) and checks the expected count. */
    private int report(String side, RpingResult r) {
        stderr.println("rdmaflux rping " + side + ": " + r.pings() + " pings"
                + (validate ? ", " + r.verified() + " verified" : ""));
        if (count > 0 && r.pings() != count) {
            stderr.println("rdmaflux rping " + side + ": expected " + count + " pings");
            return 1;
        }
        return 0;
    }

    private static String describe(Throwable e) {
        Throwable t = reactor.core.Exceptions.unwrap(e);
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }
}
