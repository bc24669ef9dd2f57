package rdmaflux.samples.asyncwatch;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import rdmaflux.verbs.AsyncEvent;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;

/**
 * libibverbs' {@code ibv_asyncwatch} ({@code asyncwatch.c}): opens a device and prints each
 * asynchronous event as it comes ({@link RdmaContext#awaitAsyncEvent}, which acknowledges it), in the
 * C program's format; port events carry their port. Unlike the C program, which names only port
 * events, every event is printed by its {@code IBV_EVENT_*} name. Runs until interrupted, or until
 * {@code --count} events arrived; {@code --timeout} bounds the wait for them.
 */
@Command(name = "asyncwatch", mixinStandardHelpOptions = true,
        description = "Prints the asynchronous events of an RDMA device, like ibv_asyncwatch.")
public final class AsyncWatch implements Callable<Integer> {
    /** Creates the command; picocli sets the options given. */
    public AsyncWatch() {
    }

    @Spec
    CommandSpec spec;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEV", description = "RDMA device (default: the first one).")
    String device;

    @Option(names = {"-n", "--count"}, description = "Exit after this many events (default: run until killed).")
    int count;

    @Option(names = "--timeout", paramLabel = "SECONDS",
            description = "With --count: exit 1 when the events did not all arrive within this time (default "
                    + "${DEFAULT-VALUE}).")
    int timeoutSeconds = 60;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new AsyncWatch()).execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            if (!Rdma.isAvailable()) {
                err.println("Failed to get IB devices list: " + Rdma.unavailabilityCause().getMessage());
                return 1;
            }
            String name = device;
            if (name == null) {
                name = Rdma.devices().stream().map(RdmaDevice::name).findFirst().orElse(null);
            }
            final String wanted = name;
            if (name == null || Rdma.devices().stream().noneMatch(d -> d.name().equals(wanted))) {
                err.println("IB device " + (device == null ? "" : device) + " not found");
                return 1;
            }
            try (RdmaContext ctx = Rdma.open(name)) {
                out.println(name + ": async event FD " + ctx.asyncFd());
                out.flush();
                long deadline = System.nanoTime() + Duration.ofSeconds(timeoutSeconds).toNanos();
                for (int seen = 0; count == 0 || seen < count; ) {
                    Duration wait = count == 0 ? Duration.ofSeconds(3600)
                            : Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                    AsyncEvent e = ctx.awaitAsyncEvent(wait);
                    if (e == null) {
                        if (count == 0) {
                            continue;
                        }
                        err.println("received " + seen + " of " + count + " events within " + timeoutSeconds + " s");
                        return 1;
                    }
                    out.println(String.format("  event_type %s (%d), port %d", e.type().nativeName(),
                            e.type().value(), e.portNumber()));
                    out.flush();
                    seen++;
                }
                return 0;
            }
        } finally {
            out.flush();
            err.flush();
        }
    }
}
