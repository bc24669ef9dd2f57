package example.consumer;

import java.net.InetAddress;
import java.time.Duration;
import java.util.stream.Collectors;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.Step;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaDevice;

/**
 * Connects a client to a server in this process over RDMA and echoes a message; with rsocket-core
 * resolved, also one RSocket request-response over RDMA; with rdmaflux-metrics and Micrometer, counts
 * the messages with rdmaflux's recorder. Prints one {@code consumer:} line per finding, for ConsumerIT.
 *
 * <p>The optional parts live in classes of their own ({@link RSocketEcho}, {@link Metered}) that are
 * loaded only when their libraries are there: without them, nothing here links against RSocket or
 * Micrometer, which is what proves rdmaflux's core needs neither at run time.
 */
public final class Main {
    // The sandbox runs this JVM under instruction emulation, on a host that may be busy: the first
    // connection of a fresh JVM there can take longer than the default steps allow.
    private static final Duration STEP = Duration.ofSeconds(60);

    private Main() {
    }

    /**
     * Runs the checks.
     *
     * @param args the IP address of an RDMA interface
     * @throws Exception when anything fails: the exit status is then not 0
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: example.consumer.Main <IP address of an RDMA interface>");
            System.exit(2);
        }
        long start = System.nanoTime();
        InetAddress address = InetAddress.getByName(args[0]);
        Module self = Main.class.getModule();
        boolean assertions = false;
        assert assertions = true; // records whether -ea reached this program
        boolean rsocket = present("rsocket.core", "io.rsocket.RSocket");
        boolean micrometer = present("rdmaflux.metrics", "rdmaflux.metrics.MicrometerRdmaRecorder")
                && present("micrometer.core", "io.micrometer.core.instrument.MeterRegistry");
        say("path " + (self.isNamed() ? "module" : "class"));
        say("assertions " + (assertions ? "on" : "off"));
        say("rsocket " + (rsocket ? "present" : "absent"));
        say("micrometer " + (micrometer ? "present" : "absent"));
        if (self.isNamed()) {
            say("modules " + self.getLayer().modules().stream().map(Module::getName)
                    .filter(n -> !n.startsWith("java.") && !n.startsWith("jdk."))
                    .sorted().collect(Collectors.joining(",")));
        }
        // rdmaflux.verbs is read through rdmaflux.cm's requires transitive, not required here.
        say("devices " + Rdma.devices().stream().map(RdmaDevice::name).sorted().toList());

        ConnectionOptions base = ConnectionOptions.builder()
                .timeout(Step.ADDRESS, STEP).timeout(Step.ROUTE, STEP)
                .timeout(Step.CONNECT, STEP).timeout(Step.ACCEPT, STEP)
                .build();
        Metered metered = micrometer ? new Metered() : null;
        ConnectionOptions options = metered == null ? base : metered.options(base);
        say("echo \"" + Echo.roundTrip(address, options, "hello, RDMA") + "\"");
        if (metered != null) {
            say("messages sent " + metered.messagesSent());
        }
        if (rsocket) {
            say("rsocket reply \"" + RSocketEcho.requestResponse(address, base, "RDMA") + "\"");
        }
        say("done in " + (System.nanoTime() - start) / 1_000_000 + " ms");
    }

    /**
     * Whether an optional library can be used: on the module path, whether its module was resolved
     * ({@code requires static} alone does not resolve it); on the class path, whether its class is there.
     */
    private static boolean present(String module, String className) {
        Module self = Main.class.getModule();
        if (self.isNamed()) {
            return self.getLayer().findModule(module).isPresent();
        }
        try {
            Class.forName(className, false, Main.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static void say(String line) {
        System.out.println("consumer: " + line);
    }
}
