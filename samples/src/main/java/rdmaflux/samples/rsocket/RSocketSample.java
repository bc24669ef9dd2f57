package rdmaflux.samples.rsocket;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.util.DefaultPayload;
import org.reactivestreams.Publisher;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import rdmaflux.samples.Samples;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * An RSocket server and client over RDMA ({@code rdmaflux.cm.rsocket}): request-response, a request-stream
 * consumed with backpressure (a few items at a time, slowly), and a channel. Without {@code --server} or
 * {@code --client} both run in this process.
 *
 * <pre>{@code
 * scripts/sample rsocket             # in the sandbox VM when this host has no RDMA device
 * }</pre>
 */
@Command(name = "rsocket", mixinStandardHelpOptions = true,
        description = "RSocket over RDMA: request-response, request-stream with backpressure, channel.")
public final class RSocketSample implements Callable<Integer> {
    private static final Duration T = Duration.ofSeconds(60);

    /** Creates the command with its default options; picocli sets the ones given. */
    public RSocketSample() {
    }

    @Spec
    CommandSpec spec;

    @Option(names = {"-a", "--address"}, description = "IP address of the RDMA interface (default: the sandbox's, "
            + "else the first active RDMA port's).")
    String address;

    @Option(names = {"-p", "--port"}, description = "RDMA CM port (default: ${DEFAULT-VALUE}).")
    int port = 7878;

    @Option(names = "--server", description = "Run only the server (until interrupted).")
    boolean serverOnly;

    @Option(names = "--client", description = "Run only the client.")
    boolean clientOnly;

    @Option(names = {"-n", "--items"}, description = "Items of the request-stream (default: ${DEFAULT-VALUE}).")
    int items = 20;

    private PrintWriter out;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RSocketSample()).execute(args));
    }

    /** The server's handler: what an RSocket application writes, whatever the transport. */
    static RSocket responder() {
        return new RSocket() {
            @Override
            public Mono<Payload> requestResponse(Payload request) {
                String name = text(request);
                return Mono.just(DefaultPayload.create("hello, " + name));
            }

            @Override
            public Flux<Payload> requestStream(Payload request) {
                int n = Integer.parseInt(text(request));
                return Flux.range(1, n).map(i -> DefaultPayload.create("item " + i + " of " + n));
            }

            @Override
            public Flux<Payload> requestChannel(Publisher<Payload> requests) {
                return Flux.from(requests).map(p -> DefaultPayload.create(text(p).toUpperCase()));
            }
        };
    }

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        if (serverOnly && clientOnly) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--server and --client exclude each other");
        }
        String ip = Samples.address("rsocket", address);
        if (ip == null) {
            return Samples.CANNOT_RUN;
        }
        InetSocketAddress at = new InetSocketAddress(InetAddress.getByName(ip), port);
        RdmaCloseableServer server = null;
        if (!clientOnly) {
            server = RSocketServer.create(SocketAcceptor.with(responder()))
                    .bind(RdmaServerTransport.create(at))
                    .block(T);
            say("server: RSocket over RDMA on " + server.address());
            if (serverOnly) {
                server.onClose().block();
                return 0;
            }
        }
        try {
            client(at);
        } finally {
            if (server != null) {
                server.dispose();
                server.onClose().block(T);
            }
        }
        return 0;
    }

    private void client(InetSocketAddress at) {
        RSocket rsocket = RSocketConnector.create()
                .connect(RdmaClientTransport.create(at))
                .block(T);
        try {
            say("client: request-response: " + rsocket.requestResponse(DefaultPayload.create("RDMA"))
                    .map(RSocketSample::text).block(T));

            List<String> stream = rsocket.requestStream(DefaultPayload.create(Integer.toString(items)))
                    .map(RSocketSample::text)
                    .limitRate(4) // asks the server for 4 items at a time: backpressure crosses the wire
                    .delayElements(Duration.ofMillis(20)) // a slow consumer
                    .collectList().block(T);
            say("client: request-stream with backpressure: " + stream.size() + " items, last \""
                    + stream.get(stream.size() - 1) + "\"");

            List<String> channel = rsocket.requestChannel(Flux.just("one", "two", "three").map(DefaultPayload::create))
                    .map(RSocketSample::text).collectList().block(T);
            say("client: channel: " + channel);
        } finally {
            rsocket.dispose();
            rsocket.onClose().block(T);
        }
        say("client: done");
    }

    private static String text(Payload p) {
        try {
            return p.getDataUtf8();
        } finally {
            p.release();
        }
    }

    private void say(String line) {
        out.println(line);
        out.flush();
    }
}
