package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

import rdmaflux.cm.PortCounters;

/**
 * The multicast rows: the datagram rate of the verbs layer and of the reactive API ({@link MulticastRate})
 * against {@code mckey}, per size.
 */
final class MulticastRows {
    /** The metric of the reactive multicast rows. */
    static final String REACTIVE_METRIC = "multicast datagram rate, reactive API";
    /** Their target: at least 0.8 × mckey. */
    static final Row.Target REACTIVE_TARGET = Row.Target.ratioAtLeast(0.8);
    /** The port counter of packets transmitted (rxe: once per UD datagram). */
    private static final String SENT_PKTS = "sent_pkts";
    /**
     * The most untimed rounds before the reactive rows: under emulation C2 takes 30 or more rounds to finish with
     * the Reactor path, and a row measured before that measures the compiler.
     */
    static final int REACTIVE_WARMUP_ROUNDS = 40;
    private final InetAddress ip;
    private final String device;
    private final String mcGroup;
    private final boolean quick;
    private final int repeat;
    private final boolean verbose;
    private final Duration timeout;
    private final boolean pin;
    private final Comparison comparison;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> say;
    private int groupsUsed;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param device the RDMA device (its port counters go into the notes)
     * @param mcGroup the first multicast group; each run takes the next
     * @param quick a short run
     * @param repeat runs of each side
     * @param verbose print each run
     * @param timeout the longest wait for any step
     * @param pin pin the sending thread to CPU 0, as the C sender
     * @param comparison measures the verbs rows against mckey
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until the JIT has gone quiet
     * @param say prints a line
     */
    MulticastRows(InetAddress ip, String device, String mcGroup, boolean quick, int repeat, boolean verbose,
                  Duration timeout, boolean pin, Comparison comparison, Consumer<Row> progress, Runnable awaitJitQuiet,
                  Consumer<String> say) {
        this.ip = ip;
        this.device = device;
        this.mcGroup = mcGroup;
        this.quick = quick;
        this.repeat = repeat;
        this.verbose = verbose;
        this.timeout = timeout;
        this.pin = pin;
        this.comparison = comparison;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.say = say;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * Multicast datagram rate, per size: ours on the verbs layer vs mckey (alternating, medians, target as
     * bandwidth); then the reactive API's rate vs mckey runs of its own, alternating the same way
     * ({@link #REACTIVE_TARGET}). The reactive runs come after all verbs runs, so the JIT compiling Reactor code
     * does not compete with the verbs loops.
     * Every run joins a fresh group, so nothing of an earlier run can arrive in it. The notes give the
     * datagrams lost (sent but not received) per side over the timed runs, and what the port's counters saw.
     */
    List<Row> rows(int count, int[] sizes, CTools c) {
        List<Row> rows = new ArrayList<>();
        // At least 4000 datagrams a round, so a quick run's short loops get compiled before they are timed.
        int warmCount = Math.max(count, 4000);
        String warmError = warmUntilSettled("multicast verbs loop", warmCount, quick ? 3 : 6, () -> Affinity.pinned(pin,
                () -> MulticastRate.verbs(ip, nextGroup(), warmCount, sizes[0], timeout, pin, awaitJitQuiet)));
        for (int size : sizes) {
            // [0] ours, [1] C: datagrams lost; the port's sent_pkts and rcvd_pkts over the runs
            long[] lost = new long[2];
            long[] sentPkts = new long[2];
            long[] rcvdPkts = new long[2];
            boolean[] lossUnknown = new boolean[1];
            Row verbs = comparison.compare("multicast datagram rate", size, "msg/s", "mckey",
                    Row.Target.RATIO_AT_LEAST, () -> {
                PortCounters c0 = PortCounters.read(device, 1);
                MulticastRate.Run r = Affinity.pinned(pin, () -> MulticastRate.verbs(ip, nextGroup(), count, size,
                        timeout, pin, awaitJitQuiet));
                PortCounters c1 = PortCounters.read(device, 1);
                sentPkts[0] += c1.get(SENT_PKTS) - c0.get(SENT_PKTS);
                rcvdPkts[0] += c1.get(PortCounters.RECEIVED_PACKETS) - c0.get(PortCounters.RECEIVED_PACKETS);
                lost[0] += r.lost();
                if (verbose) {
                    say("bench:   multicast %s ours (verbs): %.0f datagrams/s, %d of %d received", Row.sizeText(size),
                            r.datagramsPerSecond(), r.received(), count);
                }
                return new Comparison.Measured(r.datagramsPerSecond(), r.allocPerDatagram(), CpuTime.take(r.sent()));
            }, () -> mckey(c, count, size, sentPkts, rcvdPkts, lost, lossUnknown), count + " datagrams; verbs layer");
            String note = verbs.note() + "; lost ours " + lost[0] + ", C " + (lossUnknown[0] ? "?" : lost[1]);
            if (PortCounters.read(device, 1).get(SENT_PKTS) >= 0) {
                note += "; port sent/rcvd pkts ours " + sentPkts[0] + "/" + rcvdPkts[0] + ", C " + sentPkts[1] + "/"
                        + rcvdPkts[1];
            }
            if (warmError != null) {
                note += "; " + warmError;
            }
            rows.add(verbs.withNote(note));
        }

        String reactiveWarmError = warmUntilSettled("multicast reactive API", count, quick ? 1 : REACTIVE_WARMUP_ROUNDS,
                () -> Affinity.pinned(pin, () -> MulticastRate.reactive(ip, nextGroup(), count, sizes[0], timeout,
                        awaitJitQuiet)));
        for (int size : sizes) {
            long[] lost = new long[2];
            long[] sentPkts = new long[2];
            long[] rcvdPkts = new long[2];
            boolean[] lossUnknown = new boolean[1];
            // Its own mckey runs, alternating with ours, as the verbs rows: no value is borrowed from another row.
            Row reactive = comparison.compare(REACTIVE_METRIC, size, "msg/s", "mckey", REACTIVE_TARGET, () -> {
                MulticastRate.Run run = Affinity.pinned(pin, () -> MulticastRate.reactive(ip, nextGroup(), count,
                        size, timeout, awaitJitQuiet));
                lost[0] += run.lost();
                if (verbose) {
                    say("bench:   multicast %s ours (reactive): %.0f datagrams/s, %d of %d received",
                            Row.sizeText(size), run.datagramsPerSecond(), run.received(), count);
                }
                return new Comparison.Measured(run.datagramsPerSecond(), run.allocPerDatagram(),
                        CpuTime.take(run.sent()));
            }, () -> mckey(c, count, size, sentPkts, rcvdPkts, lost, lossUnknown), count + " datagrams; "
                    + "rdmaflux.cm RdmaMulticast, " + count + " receive and send buffers; alloc = all threads");
            String note = reactive.note() + "; lost ours " + lost[0] + ", C " + (lossUnknown[0] ? "?" : lost[1])
                    + (reactiveWarmError != null ? "; " + reactiveWarmError : "");
            rows.add(reactive.withNote(note));
        }
        return rows;
    }

    /**
     * One mckey run (a receiver and a send-only sender) on a fresh group: its rate, or why there is none; adds
     * its port counters and losses to slot 1 of the arrays.
     */
    private CTools.Outcome mckey(CTools c, int count, int size, long[] sentPkts, long[] rcvdPkts, long[] lost,
                                 boolean[] lossUnknown) {
        PortCounters c0 = PortCounters.read(device, 1);
        CTools.Mckey m = c.mckey(nextGroup().getHostAddress(), count, size);
        PortCounters c1 = PortCounters.read(device, 1);
        sentPkts[1] += c1.get(SENT_PKTS) - c0.get(SENT_PKTS);
        rcvdPkts[1] += c1.get(PortCounters.RECEIVED_PACKETS) - c0.get(PortCounters.RECEIVED_PACKETS);
        if (verbose) {
            say("bench:   multicast %s mckey: %s", Row.sizeText(size), m.ok()
                    ? String.format("%.0f datagrams/s", m.datagramsPerSecond()) : m.error());
        }
        if (m.received() < 0) {
            lossUnknown[0] = true;
        } else {
            lost[1] += count - m.received();
        }
        return m.ok() ? new CTools.Outcome(m.datagramsPerSecond(), null, null, m.cpuPerDatagram())
                : CTools.Outcome.failed(m.error());
    }

    /**
     * Untimed multicast rounds until the JIT is done with the path and two rounds in a row agree
     * ({@link Warmup#settle}, at most {@code rounds}): two rounds can agree while C2 is still compiling the
     * Reactor path, as the reactive stream rows showed.
     *
     * @return why ours failed, or {@code null}
     */
    private String warmUntilSettled(String what, int count, int rounds, Supplier<MulticastRate.Run> run) {
        try {
            Warmup.settle(what + " (" + count + " datagrams a round)", rounds, () -> run.get().datagramsPerSecond(),
                    "datagrams/s", line -> say("%s", line));
            return null;
        } catch (RuntimeException e) {
            failed = true;
            return "ours failed: " + e.getMessage();
        }
    }

    /** {@return the next multicast group: {@code --mc-group} plus the number of groups used so far} */
    private InetAddress nextGroup() {
        try {
            byte[] a = InetAddress.getByName(mcGroup).getAddress();
            int n = groupsUsed++ % 200;
            a[a.length - 1] = (byte) ((a[a.length - 1] & 0xff) + n);
            InetAddress g = InetAddress.getByAddress(a);
            if (!g.isMulticastAddress()) {
                throw new IllegalArgumentException("--mc-group " + mcGroup + " is not a multicast address");
            }
            return g;
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException("--mc-group " + mcGroup + ": " + e.getMessage(), e);
        }
    }

    private void say(String format, Object... args) {
        say.accept(String.format(format, args));
    }
}
