package rdmaflux.samples.mcast;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
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
 */
@Command(name = "mcast", mixinStandardHelpOptions = true,
        description = "Multicast sender/receiver over RDMA, compatible with rdma-core's mckey.")
public final class Mcast implements Callable<Integer> {

    @Option(names = "-m", required = true, description = "Multicast group, e.g. 239.1.1.1.")
    String group;

    @Option(names = "-b", description = "Local RDMA interface address. Default: $RDMAFLUX_SANDBOX_ADDR.")
    String bind = System.getenv().getOrDefault("RDMAFLUX_SANDBOX_ADDR", "");

    @Option(names = "-s", description = "Send (default: receive).")
    boolean send;

    @Option(names = "-C", description = "Datagrams to send or receive (default: ${DEFAULT-VALUE}).")
    int count = 10;

    @Option(names = "-S", description = "Datagram size in bytes, at most the port MTU (default: ${DEFAULT-VALUE}).")
    int size = 100;

    @Option(names = "--timeout", description = "Seconds to wait for all datagrams (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds = 60;

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
        if (!Samples.ready(bind)) {
            return Samples.CANNOT_RUN;
        }
        InetAddress g = InetAddress.getByName(group);
        MulticastOptions options = MulticastOptions.defaults().withLocalAddress(InetAddress.getByName(bind));
        Duration timeout = Duration.ofSeconds(timeoutSeconds);
        return send ? send(g, options, timeout) : receive(g, options, timeout);
    }

    private int send(InetAddress g, MulticastOptions options, Duration timeout) {
        MulticastSender sender = RdmaMulticast.sender(g, options).block(timeout);
        try {
            System.out.println("mcast: joined " + g.getHostAddress() + (sender.isSendOnly() ? " (send-only)" : "")
                    + ", qkey 0x" + Integer.toHexString(sender.qkey()));
            sender.send(Flux.range(0, count).map(i -> {
                ByteBuffer b = ByteBuffer.allocate(size);
                b.putInt(0, i);
                return b;
            })).block(timeout);
            System.out.println("mcast: sent " + count + " datagrams of " + size + " bytes");
            return 0;
        } finally {
            sender.dispose();
            sender.onDispose().block(timeout);
        }
    }

    private int receive(InetAddress g, MulticastOptions options, Duration timeout) {
        MulticastMembership m = RdmaMulticast.join(g, options).block(timeout);
        try {
            // A line to wait for: the join is complete and receives are posted.
            System.out.println("mcast: joined " + g.getHostAddress() + ", qpn " + m.qpNumber());
            long got = m.datagrams().take(count)
                    .doOnNext(d -> System.out.println("mcast: " + d.length() + " bytes from " + d.source().getHostAddress()
                            + " qpn " + d.sourceQpn()))
                    .count().block(timeout);
            System.out.println("mcast: received " + got + " datagrams");
            return got == count ? 0 : 1;
        } finally {
            m.dispose();
            m.onDispose().block(timeout);
        }
    }
}
