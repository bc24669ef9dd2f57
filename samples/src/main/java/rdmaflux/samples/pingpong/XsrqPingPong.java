package rdmaflux.samples.pingpong;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.RdmaException;
import rdmaflux.verbs.RdmaUnsupportedException;
import rdmaflux.verbs.XrcDomain;

/**
 * libibverbs' {@code ibv_xsrq_pingpong} (XRC: one XRC SRQ per client behind XRC receive QPs, XRC send
 * QPs on the clients), with the C program's options. Its first step, as in the C program, opens an
 * XRC domain ({@link RdmaContext#openXrcDomain()}); on a device without XRC (Soft-RoCE) that fails
 * with EOPNOTSUPP (errno 95), which the sample reports as the C program does, with the reason, and
 * exits 1. rdmaflux has no XRC SRQs or XRC QPs yet ({@code ibv_create_srq_ex}, {@code ibv_create_qp_ex}
 * are not bound): on a device with XRC the sample says so after opening the domain and exits 1.
 */
@Command(name = "xsrq-pingpong", mixinStandardHelpOptions = true,
        description = "XRC ping-pong like ibv_xsrq_pingpong (opens an XRC domain; fails clearly without XRC).")
public final class XsrqPingPong implements Callable<Integer> {
    /** Creates the command; picocli sets the options given. */
    public XsrqPingPong() {
    }

    @Spec
    CommandSpec spec;

    @Parameters(arity = "0..1", paramLabel = "HOST", description = "Server to connect to; without it, the server.")
    String serverHost;

    @Option(names = {"-p", "--port"}, description = "TCP port (default ${DEFAULT-VALUE}).")
    int port = 18515;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEV", description = "RDMA device (default: the first one).")
    String device;

    @Option(names = {"-i", "--ib-port"}, description = "Port of the device (default ${DEFAULT-VALUE}).")
    int ibPort = 1;

    @Option(names = {"-s", "--size"}, description = "Size of message to exchange (default ${DEFAULT-VALUE}).")
    int size = 4096;

    @Option(names = {"-m", "--mtu"}, description = "Path MTU (default ${DEFAULT-VALUE}).")
    int mtu = 1024;

    @Option(names = {"-c", "--clients"}, description = "Number of clients (server only, default ${DEFAULT-VALUE}).")
    int clients = 1;

    @Option(names = {"-n", "--num_tests"}, description = "Number of tests per client (default ${DEFAULT-VALUE}).")
    int numTests = 5;

    @Option(names = {"-l", "--sl"}, description = "Service level (default ${DEFAULT-VALUE}).")
    int sl;

    @Option(names = {"-e", "--events"}, description = "Sleep on CQ events (default: poll).")
    boolean events;

    @Option(names = {"-o", "--odp"}, description = "Use on-demand paging.")
    boolean odp;

    @Option(names = {"-g", "--gid-idx"}, paramLabel = "IDX", description = "Local port GID index.")
    int gidIndex = -1;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new XsrqPingPong()).execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter err = spec.commandLine().getErr();
        try {
            if (!Rdma.isAvailable()) {
                err.println("Failed to get IB devices list: " + Rdma.unavailabilityCause().getMessage());
                return 1;
            }
            String name = device != null ? device
                    : Rdma.devices().stream().map(RdmaDevice::name).findFirst().orElse(null);
            if (name == null) {
                err.println("No IB devices found");
                return 1;
            }
            try (RdmaContext ctx = Rdma.open(name)) {
                ctx.allocateProtectionDomain();
                XrcDomain xrcd;
                try {
                    xrcd = ctx.openXrcDomain();
                } catch (RdmaUnsupportedException e) {
                    err.println("Couldn't Open the XRC Domain " + e.errno() + " (" + e.errnoName() + "): device "
                            + name + " has no XRC support; xsrq-pingpong needs XRC domains, XRC SRQs and XRC QPs"
                            + " (Soft-RoCE implements none of them)");
                    return 1;
                }
                err.println("XRC domain opened on " + xrcd.context().deviceName() + ", but rdmaflux cannot create XRC"
                        + " SRQs or XRC send/receive QPs yet (ibv_create_srq_ex and ibv_create_qp_ex are not bound)");
                return 1;
            }
        } catch (RdmaException e) {
            err.println(e.getMessage());
            return 1;
        } finally {
            err.flush();
        }
    }
}
