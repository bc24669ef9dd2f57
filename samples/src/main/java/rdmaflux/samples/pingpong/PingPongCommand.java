package rdmaflux.samples.pingpong;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import rdmaflux.samples.devinfo.GidText;
import rdmaflux.verbs.Mtu;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.RdmaException;

/**
 * What {@code main} of every libibverbs pingpong example does, once: check the options, open the
 * device, set up ({@link PingPongSession}), post the receives, exchange addresses over TCP
 * ({@link DestinationExchange}), connect, run the loop ({@link PingPongLoop}). Subclasses name the
 * example and, for srq, the QP count. Output and errors go where picocli's writers point, in the
 * C programs' words; the exit status is 0 on success and 1 on failure, as theirs.
 */
abstract class PingPongCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    PingPongOptions options;

    /** {@return which example this is} */
    abstract PingPongKind kind();

    /** {@return the number of QPs} */
    int numQp() {
        return 1;
    }

    /** {@return how many address records each side sends: srq_pingpong always sends 256} */
    int wireRecords() {
        return numQp();
    }

    /** {@return the message size when -s is not given} */
    int defaultSize() {
        return 4096;
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            return run(out, err);
        } catch (PingPongException | RdmaException | IOException e) {
            err.println(e.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("interrupted");
            return 1;
        } finally {
            out.flush();
            err.flush();
        }
    }

    private int run(PrintWriter out, PrintWriter err) throws IOException, InterruptedException {
        Mtu mtu = options.pathMtu();
        int size = options.size(defaultSize());
        if (mtu == null || options.ibPort < 1 || options.port < 0 || options.port > 65535 || size < 1
                || options.iters < 1 || options.rxDepth < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "bad option: -m must be 256..4096 (a power of two), -i >= 1, -p 0..65535, -s, -n and -r >= 1");
        }
        if (numQp() > options.rxDepth) {
            err.println("rx_depth " + options.rxDepth + " is too small for " + numQp() + " QPs -- must have at least"
                    + " one receive per QP.");
            return 1;
        }
        if (!Rdma.isAvailable()) {
            err.println("Failed to get IB devices list: " + Rdma.unavailabilityCause().getMessage());
            return 1;
        }
        List<RdmaDevice> devices = Rdma.devices();
        String dev = options.device;
        if (dev == null) {
            if (devices.isEmpty()) {
                err.println("No IB devices found");
                return 1;
            }
            dev = devices.getFirst().name();
        } else if (devices.stream().noneMatch(d -> d.name().equals(options.device))) {
            err.println("IB device " + options.device + " not found");
            return 1;
        }
        RdmaContext ctx = Rdma.open(dev);
        PingPongSession session;
        try {
            if (kind() == PingPongKind.UD) {
                int active = ctx.queryPort(options.ibPort).activeMtu().bytes();
                if (size > active) {
                    err.println("Requested size larger than port MTU (" + active + ")");
                    ctx.close();
                    return 1;
                }
            }
            session = new PingPongSession(ctx, kind(), options, size, numQp(), mtu);
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
        try (session) {
            return exchangeAndLoop(session, out, err);
        }
    }

    private int exchangeAndLoop(PingPongSession session, PrintWriter out, PrintWriter err)
            throws IOException, InterruptedException {
        PingPongLoop loop = new PingPongLoop(session, options.iters, Duration.ofSeconds(options.waitSeconds));
        loop.prepare();
        PortAttributes port = session.port();
        if (!port.isEthernet() && port.lid() == 0) {
            err.println("Couldn't get local LID");
            return 1;
        }
        List<WireDestination> mine = session.localDestinations();
        for (WireDestination d : mine) {
            out.println(describe("  local address:  ", d));
        }
        out.flush();
        List<WireDestination> remote;
        if (options.isServer()) {
            remote = DestinationExchange.serve(options.port, mine, wireRecords(), session::connect, line -> { });
        } else {
            remote = DestinationExchange.connect(options.serverHost, options.port, mine, wireRecords(),
                    Duration.ofSeconds(options.waitSeconds));
        }
        for (WireDestination d : remote) {
            out.println(describe("  remote address: ", d));
        }
        out.flush();
        if (!options.isServer()) {
            session.connect(remote);
            if (options.check) {
                session.markPages(PAGE_SIZE);
            }
        }
        loop.run(!options.isServer(), out);
        if (options.isServer() && options.check) {
            for (int page : session.invalidPages(PAGE_SIZE)) {
                out.println("invalid data in page " + page);
            }
        }
        return 0;
    }

    /** sysconf(_SC_PAGESIZE) on the platforms RDMA runs on. */
    private static final int PAGE_SIZE = 4096;

    private static String describe(String prefix, WireDestination d) {
        return String.format("%sLID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", prefix, d.lid(), d.qpn(), d.psn(),
                GidText.of(d.gid()));
    }
}
