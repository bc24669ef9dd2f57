package rdmaflux.samples.pingpong;

import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import rdmaflux.verbs.Mtu;

/**
 * The options every libibverbs pingpong example takes, with the same letters, long names and defaults
 * ({@code rc_pingpong.c} and its siblings), shared by the pingpong commands as a picocli mixin. A
 * command whose C program has another default (ud: 1024-byte messages) changes it in its constructor.
 */
public final class PingPongOptions {
    /** Creates the options with the C programs' defaults. */
    public PingPongOptions() {
    }

    @Parameters(arity = "0..1", paramLabel = "HOST",
            description = "Server to connect to over TCP; without it this side is the server.")
    String serverHost;

    @Option(names = {"-p", "--port"}, description = "Listen on/connect to this TCP port (default ${DEFAULT-VALUE}).")
    int port = 18515;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEV", description = "RDMA device (default: the first one).")
    String device;

    @Option(names = {"-i", "--ib-port"}, description = "Port of the device (default ${DEFAULT-VALUE}).")
    int ibPort = 1;

    @Option(names = {"-s", "--size"}, description = "Size of each message (default 4096; ud: 1024).")
    Integer size;

    @Option(names = {"-m", "--mtu"}, description = "Path MTU: 256, 512, 1024, 2048 or 4096 (default ${DEFAULT-VALUE}).")
    int mtu = 1024;

    @Option(names = {"-r", "--rx-depth"}, paramLabel = "DEP",
            description = "Number of receives to post at a time (default ${DEFAULT-VALUE}).")
    int rxDepth = 500;

    @Option(names = {"-n", "--iters"}, description = "Number of exchanges (default ${DEFAULT-VALUE}).")
    int iters = 1000;

    @Option(names = {"-l", "--sl"}, description = "Service level (default ${DEFAULT-VALUE}).")
    int sl;

    @Option(names = {"-e", "--events"}, description = "Sleep on CQ events (default: poll).")
    boolean events;

    @Option(names = {"-g", "--gid-idx"}, paramLabel = "IDX",
            description = "Local port GID index; without it the GID sent is zero, as in the C programs "
                    + "(RoCE needs one: 1 is the IPv4-mapped RoCE v2 GID on Soft-RoCE).")
    int gidIndex = -1;

    @Option(names = {"-o", "--odp"}, description = "Register the buffer with on-demand paging.")
    boolean odp;

    @Option(names = {"-c", "--chk"}, description = "Validate the received buffer (the server checks it).")
    boolean check;

    @Option(names = "--wait", paramLabel = "SECONDS", description = "Longest wait for the TCP peer and for any "
            + "completion; the C programs wait forever (default ${DEFAULT-VALUE}).")
    int waitSeconds = 60;

    /** {@return whether this side is the server (no host given)} */
    boolean isServer() {
        return serverHost == null;
    }

    /** {@return the message size, {@code fallback} when -s was not given} */
    int size(int fallback) {
        return size == null ? fallback : size;
    }

    /** {@return the path MTU, or {@code null} when -m is not one of the five sizes} */
    Mtu pathMtu() {
        return switch (mtu) {
            case 256 -> Mtu.MTU_256;
            case 512 -> Mtu.MTU_512;
            case 1024 -> Mtu.MTU_1024;
            case 2048 -> Mtu.MTU_2048;
            case 4096 -> Mtu.MTU_4096;
            default -> null;
        };
    }
}
