package rdmaflux.samples.bench;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Supplier;

import rdmaflux.cm.PortCounters;

/**
 * The verbs layer's rows: latency (SEND/RECV, RDMA WRITE and READ ping-pongs vs {@code ib_*_lat}), bandwidth
 * (SEND and WRITE streams vs {@code ib_*_bw}, posting with {@code ibv_post_send} and then with the extended
 * post API), and the steady-state heap allocation of each loop, all on one connected verbs pair
 * ({@link VerbsLink}, {@link VerbsTests}).
 */
final class VerbsRows {
    /** The port counter of RNR NAKs this port's responders sent: receives were not posted in time. */
    private static final String RNR_NAKS_SENT = "send_rnr_err";

    private final InetAddress ip;
    private final String device;
    private final int basePort;
    private final boolean quick;
    private final Duration timeout;
    private final boolean pin;
    private final Set<String> only;
    private final Comparison comparison;
    private final Consumer<Row> progress;
    private final Runnable awaitJitQuiet;
    private final Consumer<String> out;
    private boolean failed;

    /**
     * @param ip the RDMA interface's address
     * @param device the RDMA device, for its port counters
     * @param basePort the verbs pair's port
     * @param quick a short run
     * @param timeout the longest wait for any step
     * @param pin whether client and server sides are pinned to CPUs 0 and 1
     * @param only the groups to run: {@code latency}, {@code bandwidth}, {@code extended} concern these rows
     * @param comparison measures ours against the C tools
     * @param progress prints a finished row
     * @param awaitJitQuiet waits until the JIT has gone quiet
     * @param out prints a line
     */
    VerbsRows(InetAddress ip, String device, int basePort, boolean quick, Duration timeout, boolean pin,
              Set<String> only, Comparison comparison, Consumer<Row> progress, Runnable awaitJitQuiet,
              Consumer<String> out) {
        this.ip = ip;
        this.device = device;
        this.basePort = basePort;
        this.quick = quick;
        this.timeout = timeout;
        this.pin = pin;
        this.only = only;
        this.comparison = comparison;
        this.progress = progress;
        this.awaitJitQuiet = awaitJitQuiet;
        this.out = out;
    }

    /** {@return whether a run of ours failed (the rows say which)} */
    boolean failed() {
        return failed;
    }

    /**
     * The latency, bandwidth and allocation rows on one connected verbs pair.
     *
     * @return the C tool's 2-byte send/recv latency (for the reactive row), NaN if not measured
     */
    double rows(List<Row> rows, int lat, int latWarm, long budget, int bwMax, int[] latSizes,
                int[] bwSizes, CTools c) {
        int maxSize = Math.max(65536, Math.max(bwSizes[bwSizes.length - 1], latSizes[latSizes.length - 1]));
        double sendLat2 = Double.NaN;
        boolean classic = only.contains("latency") || only.contains("bandwidth");
        try (VerbsLink link = VerbsLink.open(new InetSocketAddress(ip, basePort), maxSize, timeout)) {
            VerbsTests t = new VerbsTests(link, timeout, pin);
            if (pin) {
                Affinity.pin(0);
            }
            if (classic) {
                warmUp(t, latWarm);
            }
            // Bandwidth first: by the time the latency loops run, the JIT has gone quiet, so no compiler
            // thread competes with the two spinning threads and the kernel's RDMA work for the 2 CPUs.
            for (int size : only.contains("bandwidth") ? bwSizes : new int[0]) {
                int n = (int) Math.max(16, Math.min(bwMax, budget / size));
                rows.add(bandwidthRow("send bandwidth", size, "ib_send_bw", n, () -> t.sendBandwidth(size, n), false,
                        c));
                rows.add(bandwidthRow("write bandwidth", size, "ib_write_bw", n, () -> t.writeBandwidth(size, n),
                        false, c));
            }
            if (only.contains("extended")) {
                rows.addAll(extendedRows(link, maxSize, budget, bwMax, bwSizes, c));
            }
            // The timed latency runs start cold, as perftest's: no untimed round trips of their own (the Comparison
            // waits for an idle JIT before every run of either side).
            for (int size : only.contains("latency") ? latSizes : new int[0]) {
                rows.add(latencyRow("send/recv latency p50", size, "ib_send_lat", lat,
                        () -> t.sendLatency(size, 0, lat), 2, c));
                if (size == 2) {
                    sendLat2 = rows.getLast().c();
                }
                if (size == 2) {
                    rows.add(spinHintRow(t, lat, latWarm, sendLat2));
                }
                rows.add(latencyRow("RDMA write latency p50", size, "ib_write_lat", lat,
                        () -> t.writeLatency(size, 0, lat), 2, c));
                rows.add(latencyRow("RDMA read latency p50", size, "ib_read_lat", lat,
                        () -> t.readLatency(size, 0, lat), 1, c));
            }
            if (classic) {
                rows.addAll(allocationRows(t, quick ? 20 : 100, quick ? 2000 : 20000));
            }
        } finally {
            Affinity.unpin();
        }
        return sendLat2;
    }

    /**
     * Runs the small-message streams until their rate stops rising (the JIT has compiled the data path),
     * then each latency loop once, so class loading and linking stay out of every timed run.
     */
    private void warmUp(VerbsTests t, int latWarm) {
        say("bench: warming up the JIT on the verbs loops");
        warmStreams(t, "");
        t.sendLatency(2, 0, latWarm);
        t.writeLatency(2, 0, latWarm);
        t.readLatency(2, quick ? 200 : 3000, latWarm);
    }

    /** Runs the 2-byte WRITE and SEND streams until their rate stops changing by more than 5 % a round. */
    private void warmStreams(VerbsTests t, String label) {
        int chunk = quick ? 1000 : 5000;
        int maxRounds = quick ? 3 : 30;
        for (String op : List.of("write", "send")) {
            double previous = 0;
            for (int round = 1; round <= maxRounds; round++) {
                double rate = op.equals("write") ? t.writeBandwidth(2, chunk).bytesPerSecond()
                        : t.sendBandwidth(2, chunk).bytesPerSecond();
                if (round >= 3 && Math.abs(rate - previous) < 0.05 * previous) {
                    say("bench: %s stream%s warm after %d x %d messages (%.0f msg/s)", op, label, round, chunk,
                            rate / 2);
                    break;
                }
                if (round == maxRounds) {
                    say("bench: %s stream%s after %d x %d messages (%.0f msg/s), rate still changing", op, label,
                            round, chunk, rate / 2);
                }
                previous = rate;
            }
        }
    }

    /**
     * The bandwidth rows once more, with our streams posting through {@link rdmaflux.verbs.ExtendedSendQueue}
     * ({@code ibv_wr_start} ... {@code ibv_wr_complete}, one message per batch) on a pair made with
     * {@code ibv_create_qp_ex}, against perftest left to its default post API ({@code ibv_wr_*} where it
     * supports the device; the note says which it used); same sizes, depths, signaling and target. Then the
     * steady-state allocation of the two 2-byte streams on that path.
     */
    private List<Row> extendedRows(VerbsLink like, int maxSize, long budget, int bwMax, int[] bwSizes, CTools c) {
        List<Row> rows = new ArrayList<>();
        VerbsLink link;
        try {
            link = VerbsLink.openExtended(like, maxSize);
        } catch (RuntimeException e) {
            // No extended QP on this device (no create_qp_ex, EOPNOTSUPP): the rows say so instead of vanishing.
            failed = true;
            for (int size : bwSizes) {
                for (String op : List.of("send", "write")) {
                    Row row = new Row(op + " bandwidth, ibv_wr_*", size, "Gbit/s", Double.NaN, Double.NaN,
                            "ib_" + op + "_bw", Row.Target.RATIO_AT_LEAST, Double.NaN,
                            "ours failed: " + e.getMessage());
                    progress.accept(row);
                    rows.add(row);
                }
            }
            return rows;
        }
        try (link) {
            VerbsTests t = new VerbsTests(link, timeout, pin);
            say("bench: warming up the JIT on the ibv_wr_* streams");
            warmStreams(t, " (ibv_wr_*)");
            for (int size : bwSizes) {
                int n = (int) Math.max(16, Math.min(bwMax, budget / size));
                rows.add(bandwidthRow("send bandwidth, ibv_wr_*", size, "ib_send_bw", n,
                        () -> t.sendBandwidth(size, n), true, c));
                rows.add(bandwidthRow("write bandwidth, ibv_wr_*", size, "ib_write_bw", n,
                        () -> t.writeBandwidth(size, n), true, c));
            }
            int bw = quick ? 2000 : 20000;
            rows.add(allocationRow("send stream 2 B, ibv_wr_*", bw, () -> t.sendBandwidth(2, bw).allocPerMessage()));
            rows.add(allocationRow("write stream 2 B, ibv_wr_*", bw,
                    () -> t.writeBandwidth(2, bw).allocPerMessage()));
        }
        return rows;
    }

    /**
     * Steady-state heap allocation of each verbs loop, after everything above ran: bytes allocated by the
     * loop's threads (ThreadMXBean) divided by messages. Target 0.
     */
    private List<Row> allocationRows(VerbsTests t, int lat, int bw) {
        List<Row> rows = new ArrayList<>();
        record Loop(String name, int messages, Supplier<Double> run) {
        }
        for (Loop l : List.of(
                new Loop("send/recv ping-pong", 2 * lat, () -> t.sendLatency(2, 0, lat).allocPerMessage()),
                new Loop("RDMA write ping-pong", 2 * lat, () -> t.writeLatency(2, 0, lat).allocPerMessage()),
                new Loop("RDMA read", lat, () -> t.readLatency(2, 0, lat).allocPerMessage()),
                new Loop("send stream 2 B", bw, () -> t.sendBandwidth(2, bw).allocPerMessage()),
                new Loop("write stream 2 B", bw, () -> t.writeBandwidth(2, bw).allocPerMessage()),
                new Loop("send stream 64 KiB", bw / 10, () -> t.sendBandwidth(65536, bw / 10).allocPerMessage()))) {
            rows.add(allocationRow(l.name(), l.messages(), l.run()));
        }
        return rows;
    }

    /** One allocation row: {@code run} measures the loop and returns its heap bytes per message. */
    private Row allocationRow(String name, int messages, Supplier<Double> run) {
        double v = Double.NaN;
        String n = messages + " messages; client and server threads";
        try {
            v = run.get();
        } catch (RuntimeException e) {
            failed = true;
            n = "ours failed: " + e.getMessage();
        }
        Row row = new Row("heap allocation, steady state: " + name, 0, "B/msg", v, Double.NaN, "", Row.Target.ZERO,
                Double.NaN, n);
        progress.accept(row);
        return row;
    }

    /** The same SEND ping-pong with a spin-wait hint in the polling loops, for the record (no target). */
    private Row spinHintRow(VerbsTests t, int lat, int latWarm, double cSendLat) {
        double v = Double.NaN;
        double cpu = Double.NaN;
        String note = "ours with Thread.onSpinWait() in the poll loops, after two untimed runs (the hint's branch is "
                + "compiled out until first taken); perftest has no such hint";
        t.spinHint = true;
        try {
            t.sendLatency(2, latWarm, lat);
            t.sendLatency(2, latWarm, lat);
            CpuTime.take(1); // untimed: not the row's CPU
            VerbsTests.Latency l = t.sendLatency(2, latWarm, lat);
            cpu = CpuTime.take(l.messages());
            v = Stats.typicalMicros(l.stamps(), 2);
        } catch (RuntimeException e) {
            failed = true;
            note = "ours failed: " + e.getMessage();
        } finally {
            t.spinHint = false;
        }
        Row row = new Row("send/recv latency p50, spin hint", 2, "us", v, cSendLat, "ib_send_lat", Row.Target.NONE,
                Double.NaN, note).withCpu(cpu, Double.NaN);
        progress.accept(row);
        return row;
    }

    private Row latencyRow(String metric, int size, String tool, int iters, Supplier<VerbsTests.Latency> ours,
                           int rttFactor, CTools c) {
        return comparison.compare(metric, size, "us", tool, Row.Target.RATIO_AT_MOST, () -> {
            VerbsTests.Latency r = ours.get();
            return new Comparison.Measured(Stats.typicalMicros(r.stamps(), rttFactor), r.allocPerMessage(),
                    CpuTime.take(r.messages()));
        }, () -> c.latency(tool, size, iters), "");
    }

    /**
     * One bandwidth comparison. {@code wrApi} lets perftest use its {@code ibv_wr_*} path (for the rows where
     * ours does); otherwise it gets {@code --use_old_post_send}. The note names the post API perftest
     * reported when it is not the one asked for, and always on the {@code ibv_wr_*} rows. Both sides start each
     * timed stream cold: perftest starts a new process and connection for each, so ours has no untimed stream
     * before its timed one either.
     */
    private Row bandwidthRow(String metric, int size, String tool, int n, Supplier<VerbsTests.Bandwidth> ours,
                             boolean wrApi, CTools c) {
        // RNR NAKs the responder sent: a receiver that falls behind costs the sender an RNR wait each time.
        long[] rnr = new long[2];
        Set<String> apis = new TreeSet<>();
        boolean counts = metric.startsWith("send") && PortCounters.read(device, 1).get(RNR_NAKS_SENT) >= 0;
        Row row = comparison.compare(metric, size, "Gbit/s", tool, Row.Target.RATIO_AT_LEAST, () -> {
            long r0 = PortCounters.read(device, 1).get(RNR_NAKS_SENT);
            VerbsTests.Bandwidth r = ours.get();
            double cpu = CpuTime.take(r.messages());
            rnr[0] += PortCounters.read(device, 1).get(RNR_NAKS_SENT) - r0;
            return new Comparison.Measured(Stats.gbits(r.bytesPerSecond()), r.allocPerMessage(), cpu);
        }, () -> {
            long r0 = PortCounters.read(device, 1).get(RNR_NAKS_SENT);
            CTools.Outcome o = c.bandwidth(tool, size, n, wrApi);
            rnr[1] += PortCounters.read(device, 1).get(RNR_NAKS_SENT) - r0;
            if (o.postApi() != null) {
                apis.add(o.postApi());
            }
            return o.ok() ? new CTools.Outcome(Stats.gbits(o.value()), null, null, o.cpuPerMessage()) : o;
        }, n + " messages");
        String note = row.note();
        if (wrApi || !apis.isEmpty() && !apis.equals(Set.of(ToolOutput.POST_SEND_API))) {
            note += "; C posted with " + (apis.isEmpty() ? "? (perftest did not say)" : String.join(" and ", apis));
        }
        if (counts) {
            note += "; RNR NAKs ours " + rnr[0] + ", C " + rnr[1];
        }
        return row.withNote(note);
    }

    private void say(String format, Object... args) {
        out.accept(String.format(format, args));
    }
}
