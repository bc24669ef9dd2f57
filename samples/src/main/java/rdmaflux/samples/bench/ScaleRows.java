package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.cm.RdmaConnection;

/**
 * Connections at scale ({@code --only scale}): one server JVM ({@link SetupServer} with a shared receive
 * pool, {@link SetupOptions#pooled()}) holds N connections (10,000 in a full run) from the benchmark's JVM,
 * a process of its own. Each run of ours
 * <ol>
 *   <li>sets them up at once, timed as the reactive setup row ({@link ReactiveSetup}) against
 *       {@code cmtime -c N}, alternating, target ≥ 0.8 × cmtime;</li>
 *   <li>exchanges a message on every connection: each sends {@value #MESSAGE} bytes, the server echoes them,
 *       the client checks them;</li>
 *   <li>measures the server with its N connections idle: the memory its process registered, from the
 *       kernel's list of regions (pool included), and its live heap and reserved off-heap memory less those of
 *       the bound server with no connection, each per connection;</li>
 *   <li>closes them all and checks that everything is back at the baseline: the server's registered memory,
 *       and the kernel's count of every kind of RDMA object (both processes), as before the run.</li>
 * </ol>
 * A run that fails any step fails the row. Before the first timed run, untimed rounds of at most
 * {@value #WARMUP_CONNECTIONS} connections, then up to {@value #FULL_WARMUP_ROUNDS} of N, warm up the JIT
 * (not in a quick run, which takes one small round so that the baseline holds what the library keeps for
 * the loops' lifetime).
 */
final class ScaleRows {
    /** The setup row's metric. */
    static final String SETUP_METRIC = "connection setup rate at scale, reactive API";
    /** The pinned-memory row's metric. */
    static final String PINNED_METRIC = "pinned memory per idle connection, server with shared receive pool";
    /** The heap row's metric. */
    static final String HEAP_METRIC = "heap per idle connection, server with shared receive pool";
    /** The off-heap memory row's metric. */
    static final String DIRECT_METRIC = "off-heap memory per idle connection, server with shared receive pool";
    /** At most 32 KiB pinned per idle connection, pool included. */
    static final Row.Target PINNED_TARGET = Row.Target.atMost(32);
    /** Bytes each connection sends and gets back. */
    static final int MESSAGE = 64;
    /** Connections per warm-up round: a few rounds compile the setup path, whatever N is. */
    static final int WARMUP_CONNECTIONS = 1_000;
    /** Untimed rounds of N after those, at most, until one leaves the JIT nearly idle. */
    static final int FULL_WARMUP_ROUNDS = 2;

    private final InetAddress ip;
    private final boolean quick;
    private final int repeat;
    private final Duration timeout;
    private final boolean pin;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> say;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param quick a short run
     * @param repeat pairs of runs
     * @param timeout the longest wait for any step (setting up N connections may take five times this)
     * @param pin run the server JVM on CPU 1, as cmtime's server
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until this JVM's JIT is idle
     * @param say prints a line
     */
    ScaleRows(InetAddress ip, boolean quick, int repeat, Duration timeout, boolean pin, Consumer<Row> progress,
              Runnable awaitJitQuiet, Consumer<String> say) {
        this.ip = ip;
        this.quick = quick;
        this.repeat = repeat;
        this.timeout = timeout;
        this.pin = pin;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.say = say;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * {@return the setup row and the pinned-memory, heap and off-heap memory rows}
     *
     * @param conns connections per run
     * @param c the C tools
     */
    List<Row> rows(int conns, CTools c) {
        Duration longer = timeout.multipliedBy(5);
        List<Double> pinned = new ArrayList<>();
        List<Double> heap = new ArrayList<>();
        List<Double> direct = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        int[] retries = {0};
        int warmups = 0;
        int fullWarmups = 0;
        SetupServerProcess server = null;
        Comparison.Runs measured;
        try {
            try {
                server = new SetupServerProcess(ip, conns, longer, Duration.ofSeconds(quick ? 5 : 30), pin, true);
                if (quick) {
                    warmups = ReactiveSetup.warmUp(server, Math.min(conns, 20), 1, longer, awaitJitQuiet);
                } else {
                    warmups = ReactiveSetup.warmUp(server, Math.min(conns, WARMUP_CONNECTIONS),
                            ReactiveRows.SETUP_WARMUP_ROUNDS, longer, awaitJitQuiet);
                    // N at once takes branches that rounds of 1,000 never do (larger queues, collections
                    // growing past their sizes): without a round at N, both JVMs' compilers ran through the
                    // timed runs.
                    fullWarmups = conns > WARMUP_CONNECTIONS
                            ? ReactiveSetup.warmUp(server, conns, FULL_WARMUP_ROUNDS, longer, awaitJitQuiet) : 0;
                }
            } catch (RuntimeException e) {
                errors.add("ours failed: " + e.getMessage());
            }
            SetupServerProcess s = server;
            SetupServerProcess.Memory base = null;
            Map<String, Integer> kernelBase = Map.of();
            if (errors.isEmpty()) {
                try {
                    base = s.memory();
                    kernelBase = KernelResources.counts();
                } catch (RuntimeException e) {
                    errors.add("ours failed: the baseline: " + e.getMessage());
                }
            }
            if (errors.isEmpty() && !kernelBase.containsKey("qp")) {
                // An empty reading would make the baseline check hold whatever is left behind.
                errors.add("ours failed: rdma resource show listed no queue-pair count: " + kernelBase);
            }
            SetupServerProcess.Memory before = base;
            Map<String, Integer> kernelBefore = kernelBase;
            int[] run = {0};
            Runnable settle = () -> {
                awaitJitQuiet.run();
                s.quiet();
            };
            measured = !errors.isEmpty() ? ReactiveSetup.failedBeforeFirst(errors) : Comparison.run(new Comparison.Rules(repeat, 0, settle), List.of(
                    Comparison.Side.ours("ours", warm -> {
                        ReactiveSetup.Result o = ReactiveSetup.run(s, conns, longer, clients -> {
                            exchange(clients, longer);
                            SetupServerProcess.Memory idle = s.memory();
                            pinned.add(idle.pinnedBytes() / 1024.0 / conns);
                            heap.add((idle.heapBytes() - before.heapBytes()) / 1024.0 / conns);
                            direct.add((idle.directBytes() - before.directBytes()) / 1024.0 / conns);
                        });
                        retries[0] += o.retries();
                        backAtBaseline(s, before, kernelBefore, longer);
                        say.accept(String.format(java.util.Locale.ROOT, "bench:   scale run %d: %.1f conn/s, "
                                + "server %.1f KiB pinned, %.1f KiB heap and %.1f KiB off-heap per idle connection; %s",
                                ++run[0], o.rate(), pinned.getLast(), heap.getLast(), direct.getLast(), o.profile()));
                        return new Comparison.Measured(o.rate(), Double.NaN);
                    }),
                    ReactiveSetup.cmtimeSide(c, conns, say, longer)));
        } finally {
            if (server != null) {
                server.close();
            }
        }
        if (!measured.errors().getFirst().isEmpty()) {
            failed = true;
        }
        String setup = conns + " connections at once from the benchmark's JVM to an RdmaServer in a second JVM"
                + (pin ? " on CPU 1" : "") + " with " + SetupOptions.describePooled(conns) + "; clients "
                + SetupOptions.describe() + "; first subscribe..last established, vs cmtime create id..connect; "
                + retries[0] + " retried connects; then each connection exchanges a " + MESSAGE + "-byte echo, "
                + "and after closing, the server's registered memory and the kernel's RDMA object counts are "
                + "back at their baseline (checked every run)"
                + (warmups > 0 ? "; ours after " + warmups + " untimed rounds of " + Math.min(conns,
                quick ? 20 : WARMUP_CONNECTIONS) + (fullWarmups > 0 ? " and " + fullWarmups + " of " + conns : "")
                + " (the JIT's warm-up)" : "");
        List<Row> rows = new ArrayList<>();
        Row rate = Comparison.row(SETUP_METRIC, 0, "conn/s", "cmtime", SetupRows.TARGET, measured, 1, Stats::median,
                setup, "C", repeat);
        rows.add(rate);
        // The largest run's value: the bound holds in every run, not in a typical one.
        String perRun = pinned.isEmpty() ? "" : "; runs " + Stats.range(pinned);
        rows.add(new Row(PINNED_METRIC, 0, "KiB", pinned.isEmpty() ? Double.NaN : max(pinned), Double.NaN, "",
                PINNED_TARGET, Double.NaN, conns + " idle connections (after their echo); the server process's "
                + "memory regions as the kernel lists them (rdma resource show mr), its pool included, / "
                + conns + "; the largest of " + pinned.size() + " runs" + perRun));
        rows.add(new Row(HEAP_METRIC, 0, "KiB", heap.isEmpty() ? Double.NaN : max(heap), Double.NaN, "",
                Row.Target.NONE, Double.NaN, "the server JVM's live heap after a collection, less that of the "
                + "bound server with no connection, / " + conns + "; the largest of " + heap.size() + " runs"
                + (heap.isEmpty() ? "" : "; runs " + Stats.range(heap))));
        rows.add(new Row(DIRECT_METRIC, 0, "KiB", direct.isEmpty() ? Double.NaN : max(direct), Double.NaN, "",
                Row.Target.NONE, Double.NaN, "the server JVM's reserved off-heap memory (its direct buffer pool, "
                + "which counts native memory segments: connection buffers, work-request arrays), less that of the "
                + "bound server with its pool and no connection, / " + conns + "; the largest of "
                + direct.size() + " runs" + (direct.isEmpty() ? "" : "; runs " + Stats.range(direct))));
        rows.forEach(progress);
        return rows;
    }

    private static double max(List<Double> values) {
        return values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
    }

    /**
     * Every connection sends {@value #MESSAGE} bytes and gets them back from the server's echo.
     *
     * @throws IllegalStateException when an echo is missing or differs
     */
    static void exchange(List<RdmaConnection> clients, Duration timeout) {
        byte[] payload = new byte[MESSAGE];
        Arrays.fill(payload, (byte) 0x5a);
        Long echoed = Flux.fromIterable(clients)
                .flatMap(c -> Mono.zip(c.receiveBytes().next(),
                        c.send(ByteBuffer.wrap(payload).asReadOnlyBuffer()).thenReturn(true)), 512)
                .filter(t -> Arrays.equals(t.getT1(), payload)).count().block(timeout);
        if (echoed == null || echoed != clients.size()) {
            throw new IllegalStateException(echoed + " of " + clients.size() + " connections got their echo back");
        }
    }

    /**
     * Waits until the server's registered memory and the kernel's object counts are those of the baseline.
     *
     * @throws IllegalStateException when they are not within {@code timeout}
     */
    private static void backAtBaseline(SetupServerProcess server, SetupServerProcess.Memory base,
                                       Map<String, Integer> kernelBase, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long pinned = server.memory().pinnedBytes();
            Map<String, Integer> kernel = KernelResources.counts();
            if (pinned == base.pinnedBytes() && kernel.equals(kernelBase)) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("not back at the baseline " + timeout + " after closing: the server "
                        + "registers " + pinned + " bytes (baseline " + base.pinnedBytes() + "), the kernel holds "
                        + kernel + " (baseline " + kernelBase + ")");
            }
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
    }
}
