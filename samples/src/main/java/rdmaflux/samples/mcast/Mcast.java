package rdmaflux.samples.mcast;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import reactor.core.publisher.Flux;
import rdmaflux.cm.MulticastMembership;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.MulticastSender;
import rdmaflux.cm.RdmaMulticast;
import rdmaflux.samples.Samples;

/**
 * A multicast sender or receiver compatible with rdma-core's {@code mckey}: the same flags
 * ({@code -m} group, {@code -b} local RDMA address, {@code -s} send, {@code -C} count, {@code -S}
 * size), UD datagrams to the group's QPN 0xFFFFFF with the qkey from the join. Either side works
 * against {@code mckey} playing the other.
 *
 * <p>Output goes to the command line's {@link CommandLine#getOut() out} writer (stdout unless set),
 * one flushed line per event; the receiver's {@code mcast: joined} line means its receives are
 * posted, so a sender started after it loses nothing.
 */
@Command(name = "mcast", mixinStandardHelpOptions = true,
        description = "Multicast sender/receiver over RDMA, compatible with rdma-core's mckey.")
public final class Mcast implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public Mcast() {
    }

    /** The receives a group keeps posted unless {@code -C} asks for more. */
    private static final int MIN_RECEIVE_BUFFERS = MulticastOptions.defaults().receiveBuffers();
    /** Bounds the memory and the CQ (rxe allows 32767 entries) that a large {@code -C} asks for. */
    private static final int MAX_RECEIVE_BUFFERS = 4096;
    /**
     * Bounds joining and leaving, which are not part of {@code --timeout}: the join fails by itself after
     * {@link MulticastOptions#joinTimeout()}; this only ends a wait that something else got stuck in.
     */
    private static final Duration SETUP = Duration.ofSeconds(60);

    @Spec
    CommandSpec spec;

    @Option(names = "-m", required = true, description = "Multicast group, e.g. 239.1.1.1.")
    String group;

    @Option(names = "-b", description = "Local RDMA interface address. Default: $RDMAFLUX_SANDBOX_ADDR, else the address of the first active RDMA port.")
    String bind = "";

    @Option(names = "-s", description = "Send (default: receive).")
    boolean send;

    @Option(names = "-C", description = "Datagrams to send or receive (default: ${DEFAULT-VALUE}).")
    int count = 10;

    @Option(names = "-S", description = "Datagram size in bytes, at most the port MTU (default: ${DEFAULT-VALUE}).")
    int size = 100;

    @Option(names = "--timeout",
            description = "Seconds to wait for all datagrams once joined (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds = 60;

    private PrintWriter out;

    /**
     * Runs the sample.
     *
     * @param args command line
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new Mcast()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (count < 0 || size < 1 || timeoutSeconds < 1) {
            throw new ParameterException(spec.commandLine(), "-C must be at least 0, -S and --timeout at least 1");
        }
        bind = Samples.address("mcast", bind);
        if (bind == null) {
            return Samples.CANNOT_RUN;
        }
        out = spec.commandLine().getOut();
        InetAddress g = InetAddress.getByName(group);
        // Like mckey, which posts -C receives before it joins: a sender that blasts -C datagrams at
        // once must not outrun the receives this side keeps posted.
        MulticastOptions options = MulticastOptions.builder()
                .localAddress(InetAddress.getByName(bind))
                .receiveBuffers(Math.clamp(count, MIN_RECEIVE_BUFFERS, MAX_RECEIVE_BUFFERS))
                .build();
        Duration timeout = Duration.ofSeconds(timeoutSeconds);
        return send ? send(g, options, timeout) : receive(g, options, timeout);
    }

    private void say(String line) {
        out.println(line);
        // The line may be what a script or test waits for: never leave it in a buffer.
        out.flush();
    }

    private int send(InetAddress g, MulticastOptions options, Duration timeout) {
        MulticastSender sender = RdmaMulticast.sender(g, options).block(SETUP);
        try {
            say("mcast: joined " + g.getHostAddress() + (sender.isSendOnly() ? " (send-only)" : "")
                    + ", qpn " + sender.qpNumber() + ", qkey 0x" + Integer.toHexString(sender.qkey()));
            sender.send(Flux.range(0, count).map(i -> {
                ByteBuffer b = ByteBuffer.allocate(size);
                if (size >= Integer.BYTES) {
                    b.putInt(0, i);
                }
                return b;
            })).block(timeout);
            say("mcast: sent " + count + " datagrams of " + size + " bytes");
            return 0;
        } finally {
            sender.dispose();
            sender.onDispose().block(SETUP);
        }
    }

    private int receive(InetAddress g, MulticastOptions options, Duration timeout) {
        MulticastMembership m = RdmaMulticast.join(g, options).block(SETUP);
        try {
            // A line to wait for: the join is complete and receives are posted.
            say("mcast: joined " + g.getHostAddress() + ", qpn " + m.qpNumber());
            // take(timeout) ends the wait quietly, so a short count is reported rather than thrown.
            long got = m.datagrams().take(count).take(timeout)
                    .doOnNext(d -> say("mcast: " + d.length() + " bytes from " + d.source().getHostAddress()
                            + " qpn " + d.sourceQpn()))
                    .count().block();
            if (got == count) {
                say("mcast: received " + got + " datagrams");
                return 0;
            }
            say("mcast: received " + got + " of " + count + " datagrams within " + timeoutSeconds + " s");
            return 1;
        } finally {
            m.dispose();
            m.onDispose().block(SETUP);
        }
    }
}
