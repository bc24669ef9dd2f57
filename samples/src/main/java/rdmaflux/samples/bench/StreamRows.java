package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;

import rdmaflux.cm.RdmaLeakDetection;

/**
 * The rows of {@code --only stream} (issue #11): the reactive API's SEND stream against the verbs layer's,
 * and the heap each reactive API allocates per message ({@link RSocketRows} has {@code --only rsocket}'s).
 * Each ratio's two sides are measured in this run, alternating, {@code repeat} times; the table shows each
 * side's median (the stream rows: of its fast mode) and the note both ranges. The "C" column of these rows
 * holds the baseline they are judged against, which is ours too; the "C tool" column names it.
 */
final class StreamRows {
    /** Metric of the reactive stream rows. */
    static final String STREAM_METRIC = "reactive SEND stream";
    /**
     * Target of the reactive stream rows (issue #11): at least 0.85 × the verbs layer's SEND stream with the spin
     * hint, the verbs layer's own cost under the emulator (without the hint its spinning server takes qemu's host
     * thread from its client, a cost of the emulator that would flatter ours).
     */
    static final Row.Target STREAM_TARGET = Row.Target.ratioAtLeast(0.85);
    /**
     * The most untimed rounds of the three streams, in turn, before the first row ({@link Warmup#settleTogether}):
     * under emulation C2 takes some 80 rounds of 4,000 messages on each side to finish with the Reactor path
     * beside the verbs loops (until then a round of ours compiles for up to 1.5 s), and a row measured before
     * that measures the compiler, on ours more than on the verbs stream, whose path is shorter.
     */
    static final int WARMUP_MAX_ROUNDS = 150;
    /**
     * Rounds per pair of {@code --repeat}: a stream row takes {@code repeat} × this many rounds of three streams,
     * ours, the verbs stream with the spin hint and the verbs stream without it in turn ({@link Comparison#run}),
     * each of the bandwidth rows' count; a side's rate is the {@linkplain Stats#fastMode fast mode} of its
     * streams. Streams of 0.2 s taken in turn share the emulator's slow periods, where one long stream per side
     * would fall in different ones.
     */
    static final int CHUNKS = 5;
    /** Metric prefix of the allocation rows. */
    static final String ALLOC = "heap allocation, steady state: ";
    /** Metric of the allocation row of {@code receive()} and {@code release()}. */
    static final String ALLOC_RECEIVE = ALLOC + "receive() + release()";
    /** Metric of the allocation row of {@code receive()} and {@code release()} with signals on the loop. */
    static final String ALLOC_RECEIVE_LOOP = ALLOC_RECEIVE + ", signals on the completion loop";
    /** Metric of the allocation row of {@code receive()} and {@code release()} on the loop, messages not recycled. */
    static final String ALLOC_RECEIVE_CHECKED = ALLOC_RECEIVE + ", recycledMessages(false) on the completion loop";
    /** Metric of the allocation row of {@code receive()} and {@code release()} with the default leak detection. */
    static final String ALLOC_RECEIVE_SAMPLED = ALLOC_RECEIVE + ", leak detection sampled (the default)";
    /** Metric of the allocation row of {@code send(Publisher)}. */
    static final String ALLOC_PUBLISHER = ALLOC + "send(Publisher)";
    /** Heap bytes per message {@code send(Publisher)} may allocate (issue #11). */
    static final Row.Target ALLOC_PUBLISHER_TARGET = Row.Target.atMost(64);
    /** Metric of the allocation row of {@code send(ByteBuffer)}. */
    static final String ALLOC_SINGLE = ALLOC + "send(ByteBuffer)";
    /** Heap bytes per message {@code send(ByteBuffer)} may allocate (issue #11). */
    static final Row.Target ALLOC_SINGLE_TARGET = Row.Target.atMost(200);

    /** Metric of the rows that hold the reactive SEND stream against the verbs stream without the spin hint. */
    static final String NO_HINT_METRIC = "reactive SEND stream vs verbs without spin hint";

    private static final String VERBS = "verbs SEND stream (ours)";
    private static final String HINT = "verbs SEND stream, spin hint";

    private final InetAddress ip;
    private final int port;
    private final boolean quick;
    private final int repeat;
    private final Duration timeout;
    private final boolean pin;
    private final IntUnaryOperator messages;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> say;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param port the verbs pair's port (the reactive pairs take any)
     * @param quick a short run
     * @param repeat runs of each comparison
     * @param timeout the longest wait for any step
     * @param pin pin the verbs stream's client to CPU 0 and server to CPU 1, as the bandwidth rows do
     * @param messages the message count of a stream of the given size: the bandwidth rows' count
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until the JIT has gone quiet
     * @param say prints a line
     */
    StreamRows(InetAddress ip, int port, boolean quick, int repeat, Duration timeout, boolean pin,
               IntUnaryOperator messages, Consumer<Row> progress, Runnable awaitJitQuiet, Consumer<String> say) {
        this.ip = ip;
        this.port = port;
        this.quick = quick;
        this.repeat = repeat;
        this.timeout = timeout;
        this.pin = pin;
        this.messages = messages;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.say = say;
    }

    /** {@return whether any of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /** {@return the stream rows: the reactive SEND stream per size, then the allocation rows} */
    List<Row> streamRows() {
        int[] sizes = quick ? new int[] {2, 8192} : new int[] {2, 32, 512, 8192};
        List<Row> rows = new ArrayList<>();
        VerbsLink link;
        ReactiveStream pair;
        try {
            link = VerbsLink.open(new InetSocketAddress(ip, port), 8192, timeout);
        } catch (RuntimeException e) {
            return failedRows(sizes, "verbs pair: " + e.getMessage());
        }
        try (link) {
            try {
                pair = ReactiveStream.openAtVerbsDepth(new InetSocketAddress(ip, 0), 8192, timeout);
            } catch (RuntimeException e) {
                return failedRows(sizes, "reactive pair: " + e.getMessage());
            }
            try (pair) {
                VerbsTests t = new VerbsTests(link, timeout, pin);
                int chunk = quick ? 1000 : 4000;
                try {
                    settleTogether(t, pair, 2, chunk);
                } catch (RuntimeException e) {
                    return failedRows(sizes, "warm-up: " + e.getMessage());
                }
                awaitJitQuiet.run();
                for (int size : sizes) {
                    // The first size too: a JVM that runs this group alone is still compiling the path after
                    // the rounds above, and its first row measured the JIT (a third of the CPU per message).
                    warmAt(t, pair, size);
                    rows.addAll(streamRows(t, pair, size));
                }
                rows.addAll(allocationRows(pair));
            }
        }
        return rows;
    }

    /**
     * Both streams at {@code size} until the JIT is done with them: a larger message takes branches the
     * smaller ones did not (a send that is not inline, a copy of more than one word), whose first use
     * recompiles the methods they are in, which under emulation takes seconds of CPU; a run's tenth as
     * warm-up measured that compilation.
     */
    private void warmAt(VerbsTests t, ReactiveStream pair, int size) {
        int k = Math.max(16, messages.applyAsInt(size) / 4);
        try {
            settleTogether(t, pair, size, k);
        } catch (RuntimeException e) {
            // Said, not counted: the row's own runs fail the same way, and count it, unless it passed.
            say.accept("bench: warm-up at " + Row.sizeText(size) + " failed: " + e.getMessage());
        }
        awaitJitQuiet.run();
    }

    /**
     * Untimed rounds of the three streams of a row at {@code size}, {@code k} messages each, in turn and as many of
     * each, until the JIT is done with all three paths ({@link Warmup#settleTogether}).
     */
    private void settleTogether(VerbsTests t, ReactiveStream pair, int size, int k) {
        String at = " at " + Row.sizeText(size);
        Warmup.settleTogether(quick ? 3 : WARMUP_MAX_ROUNDS, List.of(
                new Warmup.Side("reactive SEND stream" + at, () -> pair.stream(size, k).messagesPerSecond()),
                new Warmup.Side("verbs with the spin hint", () -> verbsStream(t, size, 16, k, true)),
                new Warmup.Side("verbs", () -> verbsStream(t, size, 16, k, false))), Warmup.HOTSPOT, say);
    }

    /** Untimed rounds until the JIT is done with the path ({@link Warmup#settle}). */
    private void settle(String what, int max, Supplier<Double> rate) {
        Warmup.settle(what, max, rate, "msg/s", say);
    }

    private List<Row> streamRows(VerbsTests t, ReactiveStream pair, int size) {
        int n = messages.applyAsInt(size);
        int rounds = quick ? repeat : repeat * CHUNKS;
        int warm = Math.max(16, n / 10);
        // One rule for the three sides (Comparison): each timed stream after an untimed one of n/10 on the same
        // pair and a quiet JIT, in turn, no stream measured again.
        Comparison.Runs runs = Comparison.run(new Comparison.Rules(rounds, warm, awaitJitQuiet), List.of(
                Comparison.Side.ours("ours", w -> {
                    pair.stream(size, w);
                    ReactiveStream.Run run = pair.stream(size, n);
                    return new Comparison.Measured(run.messagesPerSecond(), run.allAlloc(), CpuTime.take(n));
                }),
                Comparison.Side.ours("verbs with the spin hint", w -> {
                    double rate = verbsStream(t, size, w, n, true);
                    return new Comparison.Measured(rate, Double.NaN, CpuTime.take(n));
                }),
                Comparison.Side.ours("verbs", w -> {
                    double rate = verbsStream(t, size, w, n, false);
                    return new Comparison.Measured(rate, Double.NaN, CpuTime.take(n));
                })));
        if (!runs.errors().getFirst().isEmpty()) {
            failed = true;
        }
        say.accept("  reactive SEND stream " + Row.sizeText(size) + ": ours " + rates(runs.values(0))
                + ", verbs with the spin hint " + rates(runs.values(1)) + ", verbs " + rates(runs.values(2)) + " msg/s");
        String how = rounds + " rounds of three streams, ours, the verbs stream with the spin hint and the verbs "
                + "stream without it in turn, each of " + n + " messages after one of " + warm + " and a quiet JIT; "
                + "send(Publisher) of one reused buffer to receive() + release() in this process, each side on its "
                + "own loops and scheduler, at the verbs stream's depths (128 sends in flight, 512 receive buffers)";
        String modes = "; each side's rate is the median of its streams that reached half its fastest (Stats.fastMode: "
                + "under qemu's round-robin a stream with a spinning peer runs in one of two modes)";
        Row row = Comparison.row(STREAM_METRIC, size, "msg/s", HINT, STREAM_TARGET, runs, 1, Stats::fastMode,
                how + "; baseline the verbs stream with Thread.onSpinWait() in both loops, whose PAUSE ends a virtual "
                + "CPU's turn under TCG, so its spinning server no longer takes the host thread from its client: the "
                + "verbs layer's own cost under the emulator" + modes + "; ours " + streams(runs.values(0))
                + ", verbs with the hint " + streams(runs.values(1)) + "; alloc = all threads, the largest run; CPU = "
                + "this JVM's process CPU time per message over each stream (both sides are in it)", "verbs", rounds);
        Row noHint = Comparison.row(NO_HINT_METRIC, size, "msg/s", VERBS, Row.Target.NONE, runs, 2, Stats::fastMode,
                "the streams of the row above; the verbs stream of the send bandwidth rows (ib_send_bw's loop, no "
                + "spin hint), whose spinning server takes qemu's host thread from its client" + modes + "; ours "
                + streams(runs.values(0)) + ", verbs " + streams(runs.values(2)), "verbs", rounds);
        progress.accept(row);
        progress.accept(noHint);
        return List.of(row, noHint);
    }

    /**
     * One verbs SEND stream of {@code n} after an untimed one of {@code warm}, the client on CPU 0 when pinning.
     *
     * @param hint whether both loops call {@link Thread#onSpinWait()} on an empty poll
     * @return its rate in messages per second
     */
    private double verbsStream(VerbsTests t, int size, int warm, int n, boolean hint) {
        t.spinHint = hint;
        try {
            return pinned(() -> {
                t.sendBandwidth(size, warm);
                return t.sendBandwidth(size, n).bytesPerSecond() / size;
            });
        } finally {
            t.spinHint = false;
        }
    }

    /** {@return one run's per-stream rates, for the progress line} */
    static String rates(List<Double> rates) {
        return rates.stream().map(Row::fmt).collect(java.util.stream.Collectors.joining(" "));
    }

    /** {@return the note's part on one side's streams: their range and those {@link Stats#fastMode} left out} */
    static String streams(List<Double> rates) {
        if (rates.isEmpty()) {
            return "no stream";
        }
        List<Double> slow = Stats.slowMode(rates);
        return Stats.range(rates) + (slow.isEmpty() ? ", none slow" : ", " + slow.size() + " of " + rates.size()
                + " slow (" + Stats.range(slow) + ")");
    }

    /**
     * Each API's steady-state heap bytes per message, from the threads of its side only: the server's loops
     * and signal thread for {@code receive()}+{@code release()} (during the {@code send(Publisher)} streams), the
     * client's loops, scheduler and driving thread for the send APIs.
     */
    private List<Row> allocationRows(ReactiveStream pair) {
        // The zero-allocation path tracks no message: each one the leak detector samples is an object of its
        // own with the stacks of its accesses. What sampling costs is a row of its own.
        RdmaLeakDetection.Level level = RdmaLeakDetection.level();
        RdmaLeakDetection.level(RdmaLeakDetection.Level.OFF);
        try {
            return allocationRows(pair, level);
        } finally {
            RdmaLeakDetection.level(level);
        }
    }

    private List<Row> allocationRows(ReactiveStream pair, RdmaLeakDetection.Level level) {
        int n = quick ? 2000 : 20000;
        int window = rdmaflux.cm.ConnectionOptions.defaults().sendBuffers();
        List<Double> receive = new ArrayList<>();
        List<Double> publisher = new ArrayList<>();
        List<Double> single = new ArrayList<>();
        List<Double> singleReceive = new ArrayList<>();
        List<Double> all = new ArrayList<>();
        String error = null;
        try {
            settle("send(ByteBuffer) loop", quick ? 3 : 10, () -> pair.singles(2, quick ? 1000 : 4000, window)
                    .messagesPerSecond());
            awaitJitQuiet.run();
            for (int r = 0; r < repeat; r++) {
                ReactiveStream.Run s = ReactiveStream.Run.steady(pair.stream(2, n / 2), n / 2, pair.stream(2, n), n);
                receive.add(s.serverAlloc());
                publisher.add(s.clientAlloc());
                all.add(s.allAlloc());
                ReactiveStream.Run b = ReactiveStream.Run.steady(pair.singles(2, n / 2, window), n / 2,
                        pair.singles(2, n, window), n);
                single.add(b.clientAlloc());
                singleReceive.add(b.serverAlloc());
            }
        } catch (RuntimeException e) {
            failed = true;
            error = "failed: " + e.getMessage();
        }
        List<Double> sampled = new ArrayList<>();
        String sampledError = null;
        RdmaLeakDetection.level(RdmaLeakDetection.Level.SAMPLED);
        try {
            for (int r = 0; r < repeat; r++) {
                sampled.add(ReactiveStream.Run.steady(pair.stream(2, n / 2), n / 2, pair.stream(2, n), n)
                        .serverAlloc());
            }
        } catch (RuntimeException e) {
            failed = true;
            sampledError = "failed: " + e.getMessage();
        } finally {
            RdmaLeakDetection.level(RdmaLeakDetection.Level.OFF);
        }
        // The same streams to a server whose receive() has no scheduler hop: what the data path itself
        // allocates; then without recycling, each delivery a view of its own.
        List<Double> onLoop = new ArrayList<>();
        List<Double> onLoopOwn = new ArrayList<>();
        String loopError = serverOnLoop(n, true, onLoop, onLoopOwn);
        List<Double> checked = new ArrayList<>();
        List<Double> checkedOwn = new ArrayList<>();
        String checkedError = serverOnLoop(n, false, checked, checkedOwn);
        String runs = "steady state: the bytes of a run of " + n + " messages of 2 B less those of one of " + n / 2
                + ", per extra message (what a run costs once cancels)" + (repeat > 1 ? ", median of " + repeat
                + " such pairs" : "");
        String err = error != null ? "; " + error : "";
        List<Row> rows = new ArrayList<>();
        rows.add(allocRow(ALLOC_RECEIVE, Row.Target.ZERO, receive, runs + "; the server's threads (its completion "
                + "loop, CM loop and signal thread: receive's signals and release's repost and credits) during the "
                + "send(Publisher) streams; default options: receive() hops to the loops' signal thread and emits "
                + "recycled messages; leak detection off (the bench JVM's level otherwise: " + level + ")"
                + range(receive) + err));
        rows.add(allocRow(ALLOC_RECEIVE_SAMPLED, Row.Target.NONE, sampled, runs + "; as the row above, with "
                + "RdmaLeakDetection at SAMPLED: one message in " + RdmaLeakDetection.samplingInterval() + " on "
                + "average is tracked, an object of its own with the stack of each access"
                + range(sampled) + (sampledError != null ? "; " + sampledError : "")));
        rows.add(allocRow(ALLOC_RECEIVE_LOOP, Row.Target.ZERO, onLoop, runs + "; as the row above, to a server "
                + "with Schedulers.immediate(): receive()'s messages and release() on its completion loop"
                + range(onLoop) + ownCount(onLoopOwn, n) + (loopError != null ? "; " + loopError : "")));
        rows.add(allocRow(ALLOC_RECEIVE_CHECKED, Row.Target.NONE, checked, runs + "; as the row above, the "
                + "server's options with recycledMessages(false): each message an object of its own, which fails "
                + "when used after release()" + range(checked) + ownCount(checkedOwn, n)
                + (checkedError != null ? "; " + checkedError : "")));
        rows.add(allocRow(ALLOC_PUBLISHER, ALLOC_PUBLISHER_TARGET, publisher, runs + "; the client's threads (its "
                + "loops, its scheduler, the driving thread) during the same streams, the source allocating nothing"
                + range(publisher) + "; all threads " + Row.fmt(Stats.median(all)) + err));
        rows.add(allocRow(ALLOC_SINGLE, ALLOC_SINGLE_TARGET, single, runs + "; the client's threads, one "
                + "send(ByteBuffer) a message (its Mono included), " + window + " in flight, one reused subscriber"
                + range(single)
                + "; the server's threads meanwhile " + Row.fmt(Stats.median(singleReceive)) + err));
        return rows;
    }

    /**
     * The server threads' bytes per message of {@code repeat} streams to a server on its completion loop.
     *
     * @param recycled whether the server recycles its messages
     * @param into where each run's bytes per message go
     * @param delivering where each run's bytes per message of the delivering thread, by its own count, go
     * @return the failure, or {@code null}
     */
    private String serverOnLoop(int n, boolean recycled, List<Double> into, List<Double> delivering) {
        try (ReactiveStream loopPair = ReactiveStream.open(new InetSocketAddress(ip, 0), 8192, timeout, true,
                recycled)) {
            settle("send(Publisher) to a server on its loop" + (recycled ? "" : ", not recycled"), quick ? 3 : 10,
                    () -> loopPair.stream(2, n / 2).messagesPerSecond());
            for (int r = 0; r < repeat; r++) {
                ReactiveStream.Run run = ReactiveStream.Run.steady(loopPair.stream(2, n / 2), n / 2,
                        loopPair.stream(2, n), n);
                into.add(run.serverAlloc());
                delivering.add(run.deliveryAlloc());
            }
            return null;
        } catch (RuntimeException e) {
            failed = true;
            return "failed: " + e.getMessage();
        }
    }

    /** The note's part on the completion loop's own count ({@link ReactiveStream.Run#deliveryAlloc}). */
    private static String ownCount(List<Double> values, int n) {
        return values.isEmpty() ? "" : "; the completion loop by its own exact count (getCurrentThreadAllocatedBytes, "
                + "first to last message of each run of " + n + "): " + Row.fmt(Stats.median(values)) + range(values);
    }

    private static String range(List<Double> values) {
        return values.size() > 1 ? " (" + Stats.range(values) + ")" : "";
    }

    private Row allocRow(String metric, Row.Target target, List<Double> values, String note) {
        Row row = new Row(metric, 0, "B/msg", Stats.median(values), Double.NaN, "", target, Double.NaN, note);
        progress.accept(row);
        return row;
    }

    private List<Row> failedRows(int[] sizes, String error) {
        failed = true;
        List<Row> rows = new ArrayList<>();
        for (int size : sizes) {
            rows.add(new Row(STREAM_METRIC, size, "msg/s", Double.NaN, Double.NaN, HINT, STREAM_TARGET,
                    Double.NaN, "failed: " + error).judged(Verdict.Interval.NONE, true));
        }
        rows.forEach(progress);
        return rows;
    }

    /** Runs {@code work} with the calling thread on CPU 0, as the bandwidth rows' client side, when pinning. */
    private <T> T pinned(Supplier<T> work) {
        return Affinity.pinned(pin, work);
    }
}
