package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import reactor.core.scheduler.Schedulers;
import rdmaflux.cm.ConnectionOptions;

/**
 * The reactive send/recv ping-pong of {@link ReactiveLatency} with both connections busy polling
 * ({@link ConnectionOptions.Builder#busyPoll ConnectionOptions.Builder.busyPoll}: the completion loop keeps
 * polling the CQ instead of arming it and sleeping) and the calling thread spinning for each echo, for
 * comparison with the verbs layer's spin ping-pong (spin-wait hint on) of the same run.
 *
 * <p>Configured as a busy-poll user would: signals are delivered on the completion loop that polled them
 * ({@link ConnectionOptions.Builder#scheduler} {@code Schedulers.immediate()}, as netty runs handlers on
 * its event loop), so no thread but the spinning loop and the caller has to run for a round trip; the
 * echo server's handler runs there too and does not block. Both connections share one spinning loop
 * (the library puts busy-polling connections together). Default options otherwise: credits, an echo
 * server in this process.
 */
final class ReactiveBusyPoll implements AutoCloseable {
    /** How long a loop keeps polling after the last completion: longer than any gap of the ping-pong. */
    static final Duration SPIN = Duration.ofSeconds(1);

    private final int size;
    private final ReactiveLatency.Echo echo;
    private final ReactiveLatency.Client client;

    /**
     * Starts the echo server in this process and connects to it; the warm-up rounds and the timed runs
     * then share the connection, as the verbs spin ping-pong shares its link (no connection setup, and
     * none of the JIT compiling it, between or during them).
     *
     * @param address the RDMA interface's address (port 0: any)
     * @param size message size
     * @param timeout the longest wait for any step or echo
     */
    ReactiveBusyPoll(InetSocketAddress address, int size, Duration timeout) {
        this.size = size;
        ConnectionOptions options = options(size);
        echo = new ReactiveLatency.Echo(address, options, timeout);
        try {
            client = new ReactiveLatency.Client(echo.address(), options, timeout);
        } catch (RuntimeException e) {
            echo.close();
            throw e;
        }
    }

    /**
     * {@return the options of both sides: {@link ReactiveLatency}'s, busy polling for {@link #SPIN},
     * signals on the completion loop}
     */
    static ConnectionOptions options(int size) {
        return ReactiveLatency.options(size).toBuilder().busyPoll(SPIN).scheduler(Schedulers.immediate()).build();
    }

    /**
     * One timed run of each side: typical latency (us), CPU per message (us, NaN without getrusage), our
     * heap bytes per message.
     */
    record Run(double ours, double verbs, double oursCpu, double verbsCpu, double alloc) {
    }

    /**
     * The row's measurement in this JVM, each side on one connection, as the verbs ping-pong runs on one
     * link: untimed rounds of 2,000 round trips, one of each side in turn and as many of each, until the JIT
     * is done with both paths ({@link Warmup#settleTogether}, at most {@code maxWarmRounds}: in a fresh JVM
     * under emulation C2 needs far more than the 15 rounds that sufficed after the latency rows had compiled
     * the verbs loops), a quiet JIT, then {@code repeat} timed runs of each, ours and the verbs ping-pong in
     * turn ({@link Comparison#run}).
     *
     * @param ip the RDMA interface's address
     * @param port the verbs link's port
     * @param iters timed round trips of each run
     * @param warm untimed round trips before each timed run, each side the same
     * @param repeat timed runs of each side
     * @param quick the short run: a shorter wait for the JIT
     * @param maxWarmRounds the most untimed rounds of 2,000 round trips of each side
     * @param pinThreads put the verbs ping-pong's two threads on CPUs 0 and 1, as the latency rows do
     * @param timeout the longest wait for any step or echo
     * @param say prints a line
     * @return the timed runs
     */
    static List<Run> measure(InetAddress ip, int port, int iters, int warm, int repeat, boolean quick,
                             int maxWarmRounds, boolean pinThreads, Duration timeout, Consumer<String> say) {
        List<Run> runs = new ArrayList<>();
        try (VerbsLink link = VerbsLink.open(new InetSocketAddress(ip, port), 64, timeout);
             ReactiveBusyPoll pair = new ReactiveBusyPoll(new InetSocketAddress(ip, 0), 2, timeout)) {
            VerbsTests t = new VerbsTests(link, timeout, pinThreads);
            t.spinHint = true;
            // Both sides warm up together, a round of each in turn, the same number of each (one rule for both).
            Warmup.settleTogether(maxWarmRounds, List.of(
                    new Warmup.Side("reactive busy-poll ping-pong", () -> {
                        VerbsTests.Latency l = pair.run(0, 2000);
                        CpuTime.take(1); // untimed: not the row's CPU
                        return 1e6 / (2 * Stats.typicalMicros(l.stamps(), 2));
                    }),
                    new Warmup.Side("verbs spin ping-pong", () -> {
                        VerbsTests.Latency l = Affinity.pinned(pinThreads, () -> t.sendLatency(2, 0, 2000));
                        CpuTime.take(1); // untimed: not the row's CPU
                        return 1e6 / (2 * Stats.typicalMicros(l.stamps(), 2));
                    })), Warmup.HOTSPOT, say);
            Warmup.awaitJitQuiet(Duration.ofSeconds(quick ? 5 : 30), say);
            // One rule for both sides (Comparison): the same untimed round trips and the same wait for an idle JIT
            // before each timed run, alternating, ours first, no run measured again.
            Runnable quiet = () -> Warmup.awaitJitQuiet(Duration.ofSeconds(quick ? 5 : 30), say);
            Comparison.Runs measured = Comparison.run(new Comparison.Rules(repeat, warm, quiet), List.of(
                    Comparison.Side.ours("ours", w -> {
                        VerbsTests.Latency o = pair.run(w, iters);
                        return new Comparison.Measured(Stats.typicalMicros(o.stamps(), 2), o.allocPerMessage(),
                                CpuTime.take(o.messages()));
                    }),
                    Comparison.Side.ours("verbs", w -> {
                        VerbsTests.Latency v = Affinity.pinned(pinThreads, () -> t.sendLatency(2, w, iters));
                        return new Comparison.Measured(Stats.typicalMicros(v.stamps(), 2), v.allocPerMessage(),
                                CpuTime.take(v.messages()));
                    })));
            if (measured.failed(1)) {
                throw new IllegalStateException(String.join("; ", measured.errors().stream().flatMap(List::stream)
                        .toList()));
            }
            for (int r = 0; r < repeat; r++) {
                Comparison.Measured o = measured.measured().get(0).get(r);
                Comparison.Measured v = measured.measured().get(1).get(r);
                runs.add(new Run(o.value(), v.value(), o.cpu(), v.cpu(), o.alloc()));
            }
        }
        return runs;
    }

    /**
     * One ping-pong on the shared connection, the calling thread spinning for each echo.
     *
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @return timestamps and the heap bytes all threads allocated per message while timed
     */
    VerbsTests.Latency run(int warmup, int iters) {
        return client.pingPong(size, warmup, iters, true);
    }

    @Override
    public void close() {
        try {
            client.close();
        } finally {
            echo.close();
        }
    }
}
