package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.ServerOptions;

/**
 * The server of the reactive setup row, in a JVM of its own ({@link SetupServerProcess} starts it), as
 * {@code cmtime}'s server is a process of its own: an {@link RdmaServer} whose accept queue holds all N
 * connections, with the row's options ({@link SetupOptions#options}). In one process, client and server
 * would share one address space and memory map, which {@code cmtime}'s two processes do not (measured in
 * the sandbox, that sharing did not change the CM loops' kernel time: docs/benchmarks.md).
 *
 * <p>It reads one command per line from its standard input and answers each with one line on its standard
 * output that starts with {@value #REPLY}:
 * <ul>
 *   <li>after it binds, unasked: {@code port P};
 *   <li>{@code quiet}: waits until its JIT is idle ({@link Warmup#awaitJitQuiet}), then {@code ok};
 *   <li>{@code mark}: starts a measurement (CPU snapshot, step totals reset), then {@code ok};
 *   <li>{@code report}: {@code report JIT_SECONDS PROFILE}, the measurement since {@code mark};
 *   <li>{@code close}: closes every accepted connection and waits until they are gone, then
 *       {@code closed N};
 *   <li>{@code memory}: collects, then {@code memory PINNED HEAP DIRECT}: the bytes of the memory regions
 *       this process registered, from the kernel's list ({@link KernelResources}), of the live heap, and of
 *       the off-heap memory the JVM reserved (its "direct" buffer pool, which native memory segments count
 *       in too);
 *   <li>end of input: closes the server and exits.
 * </ul>
 *
 * <p>With a fifth argument {@code pool}, it is the server of the scale row ({@link ScaleRows}): its
 * connections have {@link SetupOptions#pooled()} and receive into {@link SetupOptions#pool}, and each one
 * echoes what it receives.
 *
 * <p>Threads: the main thread reads the commands and owns the measurement; the server's accepted
 * connections are collected from its signal thread.
 */
public final class SetupServer {
    /** What every reply line starts with; anything else on standard output is not a reply. */
    static final String REPLY = "setup-server ";

    private SetupServer() {
    }

    /**
     * Runs the server until its standard input ends.
     *
     * @param args the RDMA interface's address, the number of connections the accept queue holds, the
     *             longest wait for binding and closing, and the longest wait for a quiet JIT, in seconds;
     *             then {@code pool} for the scale row's server
     * @throws IOException when standard input cannot be read
     */
    public static void main(String[] args) throws IOException {
        InetAddress ip = InetAddress.getByName(args[0]);
        int connections = Integer.parseInt(args[1]);
        Duration timeout = Duration.ofSeconds(Long.parseLong(args[2]));
        Duration quiet = Duration.ofSeconds(Long.parseLong(args[3]));
        PrintStream out = System.out;
        boolean pooled = args.length > 4 && args[4].equals("pool");
        StepTotals steps = new StepTotals();
        ServerOptions.Builder serverOptions = ServerOptions.builder()
                .acceptQueue(Math.max(connections, ServerOptions.DEFAULT_ACCEPT_QUEUE));
        if (pooled) {
            serverOptions.sharedReceivePool(SetupOptions.pool(connections));
        }
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(ip, 0),
                (pooled ? SetupOptions.pooled() : SetupOptions.options()).toBuilder().recorder(steps).build(),
                AcceptFilter.ACCEPT_ALL, serverOptions.build()).block(timeout);
        ConcurrentLinkedQueue<RdmaConnection> accepted = new ConcurrentLinkedQueue<>();
        Disposable acceptor = server.connections().subscribe(c -> {
            accepted.add(c);
            if (pooled) {
                c.send(c.receiveBytes().map(ByteBuffer::wrap)).subscribe(null, e -> { });
            }
        }, e -> { });
        out.println(REPLY + "port " + server.address().getPort());
        out.flush();
        ThreadCpu mark = ThreadCpu.snapshot();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String command = in.readLine(); command != null; command = in.readLine()) {
                String reply = switch (command.strip()) {
                    case "quiet" -> {
                        Warmup.awaitJitQuiet(quiet, System.err::println);
                        yield "ok";
                    }
                    case "mark" -> {
                        steps.reset();
                        // As the client's runs: each starts without the garbage of the runs before.
                        System.gc();
                        mark = ThreadCpu.snapshot();
                        yield "ok";
                    }
                    case "report" -> {
                        ThreadCpu now = ThreadCpu.snapshot();
                        yield String.format(Locale.ROOT, "report %.3f server process %.2f, server cm loop %.2f "
                                + "(user %.2f), server completion loops %.2f, server signal threads %.2f, server "
                                + "JIT %.2f; server steps: %s", now.jitSince(mark), now.processSince(mark),
                                now.groupSince(mark, "rdmaflux-cm-server"),
                                now.groupUserSince(mark, "rdmaflux-cm-server"),
                                now.groupSince(mark, "rdmaflux-completion"), now.groupSince(mark, "rdmaflux-signal"),
                                now.jitSince(mark), steps.describe());
                    }
                    case "close" -> {
                        List<RdmaConnection> all = new ArrayList<>();
                        for (RdmaConnection c = accepted.poll(); c != null; c = accepted.poll()) {
                            all.add(c);
                        }
                        Flux.fromIterable(all).flatMap(c -> {
                            c.dispose();
                            return c.onDispose();
                        }).then().block(timeout);
                        yield "closed " + all.size();
                    }
                    case "memory" -> {
                        System.gc();
                        java.lang.management.MemoryUsage heap = java.lang.management.ManagementFactory
                                .getMemoryMXBean().getHeapMemoryUsage();
                        long direct = java.lang.management.ManagementFactory.getPlatformMXBeans(
                                java.lang.management.BufferPoolMXBean.class).stream()
                                .filter(b -> b.getName().equals("direct")).mapToLong(
                                        java.lang.management.BufferPoolMXBean::getMemoryUsed).sum();
                        yield "memory " + KernelResources.registeredBytesOf(ProcessHandle.current().pid()) + " "
                                + heap.getUsed() + " " + direct;
                    }
                    default -> "unknown command " + command;
                };
                out.println(REPLY + reply);
                out.flush();
            }
        } finally {
            acceptor.dispose();
            // Connections accepted after the last close are closed by the server.
            server.disposeNow(timeout);
        }
    }
}
