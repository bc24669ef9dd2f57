package rdmaflux.samples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The parsers and statistics against output captured from the real tools (perftest 4.5, rdma-core 44). */
class BenchParsingTest {
    private static final String SEND_LAT = """
            ---------------------------------------------------------------------------------------
             local address: LID 0000 QPN 0x0013 PSN 0x24251a
             GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:00:02:01
            ---------------------------------------------------------------------------------------
             #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\s
             2       1000          1694.79        198874.40      4004.18  	       4918.00     	3334.44		22158.76 		198874.40
            ---------------------------------------------------------------------------------------
            """;
    private static final String SEND_BW = """
             #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
             65536      100              44.76              7.19   		   0.000115
            ---------------------------------------------------------------------------------------
            """;
    private static final String CMTIME = """
            disconnecting
            destroying id
            step              total ms     max ms     min us  us / conn
            create id    :        1.03       0.55       6.00      51.30
            resolve addr :       21.34      18.20    9773.00    1066.75
            resolve route:       15.49      14.10   13101.00     774.50
            create qp    :       30.09      16.80     128.00    1504.45
            connect      :      549.56     524.38  332053.00   27478.20
            disconnect   :      250.85     132.70   11678.00   12542.35
            destroy      :        3.00       2.27      11.00     149.75
            """;

    @Test
    void seesAListenerOnlyOnItsPort() {
        // rdma resource show cm_id (iproute2 6.1) in the sandbox VM, ib_send_lat's server waiting on 18600.
        String listening = "link rxe0/- cm-idn 0 state LISTEN ps TCP pid 160 comm ib_send_lat src-addr "
                + "0.0.0.0:18600 \n";
        assertTrue(ToolOutput.listensOn(listening, 18600));
        assertFalse(ToolOutput.listensOn(listening, 1860), "a prefix of the port");
        assertFalse(ToolOutput.listensOn(listening, 18601));
        assertFalse(ToolOutput.listensOn("", 18600), "no ids");
        String connected = "link rxe0/1 cm-idn 3 state CONNECT ps TCP pid 161 comm ib_send_lat src-addr "
                + "192.0.2.1:41234 dst-addr 192.0.2.1:18600 \n";
        assertFalse(ToolOutput.listensOn(connected, 18600), "a connected id is no listener");
    }

    @Test
    void parsesPerftestTables() {
        assertEquals(4004.18, ToolOutput.parseRow(SEND_LAT, 2, 9, 4), 1e-9);
        assertEquals(7.19, ToolOutput.parseRow(SEND_BW, 65536, 5, 3), 1e-9);
        assertTrue(Double.isNaN(ToolOutput.parseRow(SEND_BW, 2, 5, 3)), "no row for another size");
        // 7.19 MiB/s has three digits; 0.000115 Mpps x 64 KiB has as many and is the same bandwidth.
        assertEquals(0.000115e6 * 65536, ToolOutput.bandwidthBytesPerSecond(SEND_BW, 65536), 1e-6);
        assertEquals(7.19 * 1024 * 1024, ToolOutput.bandwidthBytesPerSecond(SEND_BW, 65536), 0.05 * 7.19 * 1024 * 1024);
        // A slow 2-byte run: MiB/s rounds to 0.00, the message rate still measures it.
        String slow = """
                 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
                 2          500              0.00               0.00   		   0.001693
                """;
        assertEquals(0.001693e6 * 2, ToolOutput.bandwidthBytesPerSecond(slow, 2), 1e-6);
        String fast = """
                 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
                 65536      5000             1180.23            1175.52   		   0.018808
                """;
        assertEquals(1175.52 * 1024 * 1024, ToolOutput.bandwidthBytesPerSecond(fast, 65536), 1e-3);
    }

    @Test
    void readsWhichPostApiPerftestUsed() {
        // ib_write_bw's banner on rxe0 (perftest 4.5-0.17): it keeps ibv_wr_* for mlx5 and EFA devices.
        String banner = """
                 Dual-port       : OFF		Device         : rxe0
                 Number of qps   : 1		Transport type : IB
                 Connection type : RC		Using SRQ      : OFF
                 PCIe relax order: OFF
                 ibv_wr* API     : OFF
                 TX depth        : 100
                """;
        assertEquals(ToolOutput.POST_SEND_API, ToolOutput.postApi(banner));
        assertEquals(ToolOutput.WR_API, ToolOutput.postApi(banner.replace("API     : OFF", "API     : ON")));
        assertNull(ToolOutput.postApi(SEND_BW), "a perftest without the line says nothing");
    }

    @Test
    void parsesCmtime() {
        Map<ConnectionRate.Step, Double> t = ToolOutput.parseCmtime(CMTIME);
        assertEquals(ConnectionRate.Step.values().length, t.size());
        assertEquals(549.56, t.get(ConnectionRate.Step.CONNECT), 1e-9);
        // 20 connections over create id + resolve addr + resolve route + create qp + connect.
        double rate = new ConnectionRate.Result(20, t).setupRate();
        assertEquals(20 / ((1.03 + 21.34 + 15.49 + 30.09 + 549.56) / 1000), rate, 1e-9);
    }

    @Test
    void fastModeIsTheMedianOfTheStreamsAtHalfTheFastestOrMore() {
        // Per-stream rates of one side as a 2026-11-27 run gave them at 2 B: two modes, 4,611-4,748 and
        // 20,806-23,295 msg/s. The slow ones are left out; the fast ones' median is the rate.
        List<Double> rates = List.of(20806.0, 22793.0, 4727.0, 4748.0, 19998.0, 22199.0, 20937.0, 4611.0, 21459.0);
        assertEquals(List.of(4727.0, 4748.0, 4611.0), Stats.slowMode(rates));
        assertEquals(21198.0, Stats.fastMode(rates), 1e-9);
        // Exactly half the fastest counts as fast; one mode only leaves every stream in.
        assertEquals(List.of(), Stats.slowMode(List.of(10.0, 20.0)));
        assertEquals(15.0, Stats.fastMode(List.of(10.0, 20.0)), 1e-12);
        assertTrue(Double.isNaN(Stats.fastMode(List.of())));
        assertEquals(List.of(), Stats.slowMode(List.of()));
    }

    @Test
    void aBusyPollForksRunSurvivesItsLine() {
        // A run without getrusage has no CPU column: NaN must come back as NaN, not fail the row.
        ReactiveBusyPoll.Run run = new ReactiveBusyPoll.Run(28.125, 23.5, Double.NaN, 126.7, 0.03125);
        String line = BusyPollFork.format(run);
        assertEquals(run, BusyPollFork.parse(line));
        assertThrows(IllegalArgumentException.class, () -> BusyPollFork.parse("28.1 23.5"));
    }

    @Test
    void typicalLatencyIsPerftestsMedian() {
        // Gaps 10, 20, 30, 40, 1000, 2000 ns; the two largest dropped; median of 10..40 is 25; halved.
        long[] stamps = {0, 10, 30, 60, 100, 1100, 3100};
        assertEquals(25 / 1e3 / 2, Stats.typicalMicros(stamps, 2), 1e-12);
        assertEquals(25 / 1e3, Stats.typicalMicros(stamps, 1), 1e-12);
    }

    /** A ratio row judged as if its runs had pinned the ratio down: an interval of just the point ratio. */
    private static Row sure(Row r) {
        return r.judged(new Verdict.Interval(r.ratio(), r.ratio()), false);
    }

    @Test
    void verdictsFollowTheTargets() {
        Row lat = new Row("lat", 2, "us", 4.5, 4.0, "ib_send_lat", Row.Target.RATIO_AT_MOST, 0, "");
        assertEquals("MISSED", sure(lat).verdict());
        Row lat2 = new Row("lat", 2, "us", 4.4, 4.0, "ib_send_lat", Row.Target.RATIO_AT_MOST, 0, "");
        assertEquals("met", sure(lat2).verdict());
        Row bw = new Row("bw", 2, "Gbit/s", 0.94, 1.0, "ib_send_bw", Row.Target.RATIO_AT_LEAST, 0, "");
        assertEquals("MISSED", sure(bw).verdict());
        Row setup = new Row("setup", 0, "conn/s", 0.8, 1.0, "cmtime", SetupRows.TARGET, 0, "");
        assertEquals("met", sure(setup).verdict());
        Row alloc = new Row("alloc", 0, "B/msg", 0.01, Double.NaN, "", Row.Target.ZERO, 0, "");
        assertEquals("MISSED", alloc.verdict());
        // A missing side fails the row; a ratio without an interval is not met either way.
        Row none = new Row("c missing", 2, "us", 4, Double.NaN, "x", Row.Target.RATIO_AT_MOST, 0, "");
        assertEquals("FAILED", sure(none).verdict());
        assertEquals("inconclusive", lat2.verdict());
        assertTrue(lat2.notMet());
        // The multicast datagram rate has the bandwidth target.
        Row mc = new Row("multicast datagram rate", 100, "msg/s", 949, 1000, "mckey", Row.Target.RATIO_AT_LEAST, 0, "");
        assertEquals("MISSED", sure(mc).verdict());
        Row mc2 = new Row("multicast datagram rate", 100, "msg/s", 950, 1000, "mckey", Row.Target.RATIO_AT_LEAST, 0,
                "");
        assertEquals("met", sure(mc2).verdict());
        assertEquals("ratio >= 0.950", mc2.targetText());
        // The reactive large-message rows have their own target, 0.9 x ib_read_bw.
        Row large = new Row(LargeRows.METRIC, 65536, "Gbit/s", 0.9, 1.0, "ib_read_bw", LargeRows.TARGET, 0,
                "");
        assertEquals("met", sure(large).verdict());
        assertEquals("ratio >= 0.900", large.targetText());
        Row large2 = new Row(LargeRows.METRIC, 65536, "Gbit/s", 0.89, 1.0, "ib_read_bw", LargeRows.TARGET,
                0, "");
        assertEquals("MISSED", sure(large2).verdict());
        // The reactive multicast rows: at least 0.8 x mckey; the busy-poll ping-pong at most 1.3 x the verbs spin
        // ping-pong.
        Row rmc = new Row(MulticastRows.REACTIVE_METRIC, 100, "msg/s", 799, 1000, "mckey",
                MulticastRows.REACTIVE_TARGET, 0, "");
        assertEquals("MISSED", sure(rmc).verdict());
        assertEquals("ratio >= 0.800", rmc.targetText());
        Row busy = new Row(ReactiveRows.BUSY_POLL_METRIC, 2, "us", 39, 30, "verbs spin ping-pong",
                ReactiveRows.BUSY_POLL_TARGET, 0, "");
        assertEquals("met", sure(busy).verdict());
        assertEquals("ratio <= 1.30", busy.targetText());
        assertEquals("met", sure(busy).withNote("x").withCpu(1, 2).withNote("y").verdict());
        assertEquals("MISSED", sure(new Row(ReactiveRows.BUSY_POLL_METRIC, 2, "us", 40, 30, "verbs spin ping-pong",
                ReactiveRows.BUSY_POLL_TARGET, 0, "")).verdict());
    }

    /** The targets of the rows StreamRows makes, chosen there, not by Row from their metric names. */
    @Test
    void streamRowsHaveTheirOwnTargets() {
        assertEquals("ratio >= 0.850", new Row(StreamRows.STREAM_METRIC, 2, "msg/s", 85, 100, "verbs",
                StreamRows.STREAM_TARGET, 0, "").targetText());
        assertEquals("ratio <= 1.30", new Row(RSocketRows.RR_METRIC, 2, "us", 13, 10, "ours",
                RSocketRows.RR_TARGET, 0, "").targetText());
        assertEquals("ratio >= 0.800", new Row(RSocketRows.RS_METRIC, 2, "msg/s", 80, 100, "ours",
                RSocketRows.RS_TARGET, 0, "").targetText());
        Row publisher = new Row(StreamRows.ALLOC_PUBLISHER, 0, "B/msg", 64, Double.NaN, "",
                StreamRows.ALLOC_PUBLISHER_TARGET, Double.NaN, "");
        assertEquals("<= 64 B/msg", publisher.targetText());
        assertEquals("met", publisher.verdict());
        Row single = new Row(StreamRows.ALLOC_SINGLE, 0, "B/msg", 201, Double.NaN, "",
                StreamRows.ALLOC_SINGLE_TARGET, Double.NaN, "");
        assertEquals("<= 200 B/msg", single.targetText());
        assertEquals("MISSED", single.verdict());
    }

    /** The CPU column: a row keeps it through withNote, and the table prints both sides. */
    @Test
    void cpuColumnIsKeptAndPrinted() {
        Row r = new Row("send bandwidth", 2, "Gbit/s", 1, 1, "ib_send_bw", Row.Target.RATIO_AT_LEAST, 0, "n")
                .withCpu(12.5, 10.25).withNote("m");
        assertEquals(12.5, r.cpuOurs());
        assertEquals(10.25, r.cpuC());
        assertEquals("m", r.note());
        String md = Table.markdown(List.of(r));
        assertTrue(md.contains("| ours/C | 95 % CI | target | verdict |"), md);
        assertTrue(md.contains("| CPU us/msg ours | CPU us/msg C |"), md);
        assertTrue(md.contains("| 12.50 | 10.25 | m |"), md);
        String text = Table.text(List.of(r));
        assertTrue(text.contains("12.50") && text.contains("10.25"), text);
    }

    /** A C tool's CPU time: snapshots of its threads' run time, taken by the reader thread at its lines. */
    @Test
    void childCpuTimeIsSnapshotAtItsOutputLines(@TempDir Path dir) throws Exception {
        long[] pid = {-1};
        long[] at = {-1, -1};
        // About 0.1-0.3 s of CPU between the two lines, then a second of sleep: the snapshot is the child's own.
        try (WatchedProcess w = WatchedProcess.start(List.of("sh", "-c", "echo start; i=0; while [ $i -lt 100000 ]; "
                + "do i=$((i+1)); done; echo done; sleep 1"), dir.resolve("out.txt"), l -> {
                    if (l.equals("start")) {
                        at[0] = CpuTime.snapshot(pid[0]);
                    } else if (l.equals("done")) {
                        at[1] = CpuTime.snapshot(pid[0]);
                    }
                }, pid)) {
            assertTrue(w.waitFor(System.nanoTime() + Duration.ofSeconds(60).toNanos()));
        }
        assertTrue(pid[0] > 0 && at[0] >= 0, "first snapshot " + at[0]);
        assertTrue(at[1] - at[0] > 10_000, "the busy loop's CPU: " + (at[1] - at[0]) + " us");
    }

    /** Our side: the process's CPU time grows with work, and a timed part is taken once. */
    @Test
    void processCpuTimeCoversTheTimedPart() {
        long pid = ProcessHandle.current().pid();
        assertTrue(CpuTime.stat(pid) >= 0, "/proc/self/stat readable");
        long s0 = CpuTime.snapshot(pid);
        assertTrue(s0 >= 0, "threads' run time readable");
        CpuTime.start();
        long x = 0;
        long end = System.nanoTime() + Duration.ofMillis(200).toNanos();
        while (System.nanoTime() < end) {
            x += Long.numberOfTrailingZeros(x + System.nanoTime());
        }
        CpuTime.stop();
        double perMessage = CpuTime.take(10);
        assertTrue(perMessage > 1_000 && x >= 0, "10 messages over >= 10 ms of CPU: " + perMessage + " us each");
        assertTrue(Double.isNaN(CpuTime.take(10)), "taken once");
        assertTrue(CpuTime.snapshot(pid) - s0 >= 10_000, "the threads' run time grew by the busy loop's");
        assertEquals(-1, CpuTime.snapshot(Long.MAX_VALUE));
        assertTrue(ToolOutput.isResultLine(" 2       1000          1694.79        198874.40      4004.18", 2));
        assertTrue(!ToolOutput.isResultLine(" #bytes #iterations    t_min[usec]", 2));
    }

    /** mckey prints no numbers; its lines are timestamped as they arrive, which this checks with a shell. */
    @Test
    void watchedProcessStampsEachLineWhenItArrives(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("out.txt");
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        try (WatchedProcess w = WatchedProcess.start(List.of("sh", "-c", "echo 'mckey: joined'; sleep 2; "
                + "echo 'data transfers complete'"), file)) {
            long joined = w.await("joined", deadline);
            long complete = w.await("data transfers complete", deadline);
            assertTrue(joined > 0 && complete > joined, "both lines stamped, in order");
            // 2 s apart when printed; half of that is margin for a loaded machine stamping the first late.
            assertTrue(complete - joined >= Duration.ofMillis(1000).toNanos(),
                    "the second stamp is taken when the line arrives, not when the output ends: "
                    + (complete - joined) / 1e6 + " ms");
            assertEquals(joined, w.await("joined", deadline), "the first matching line counts");
            assertEquals(-1, w.await("never printed", deadline), "the output ended without it");
        }
        assertEquals(List.of("mckey: joined", "data transfers complete"), Files.readAllLines(file));
    }

    @Test
    void registeredBytesCountOnlyTheRegionsOfTheProcessThreads() {
        // rdma -j resource show mr (iproute2 6.1): one object per region, its creator by task id.
        String json = "[{\"ifindex\":3,\"ifname\":\"rxe0\",\"mrn\":1,\"mrlen\":4096,\"pid\":700,"
                + "\"comm\":\"java\"},{\"ifindex\":3,\"ifname\":\"rxe0\",\"mrn\":2,\"mrlen\":209715200,"
                + "\"pid\":712,\"comm\":\"rdmaflux-cm-ser\"},{\"ifindex\":3,\"ifname\":\"rxe0\",\"mrn\":3,"
                + "\"mrlen\":65536,\"pid\":900,\"comm\":\"java\"}]";
        assertEquals(4096 + 209715200L, KernelResources.registeredBytes(json, java.util.Set.of("700", "712")));
        assertEquals(0, KernelResources.registeredBytes(json, java.util.Set.of("1")));
        assertEquals(0, KernelResources.registeredBytes("[]", java.util.Set.of("700")));
    }

    @Test
    void aFailedConnectionSaysWhichEventFailedIt() {
        // ib_write_lat's client when its connection was rejected (perftest's rdma_cm_event_error_handler).
        String text = """
                 RDMA CM event error:
                Event: RDMA_CM_EVENT_REJECTED; error: 8.
                ERRNO: Operation not supported.
                Failed to handle RDMA CM event.
                ERRNO: Operation not supported.
                Failed to connect RDMA CM events.
                ERRNO: Operation not supported.
                """;
        assertEquals("RDMA CM event error: | Event: RDMA_CM_EVENT_REJECTED; error: 8. | ERRNO: Operation not supported. "
                + "| Failed to connect RDMA CM events.", ToolOutput.failure(text));
        assertEquals("a | b | c", ToolOutput.failure("x\na\nb\nc\n"), "no event: the last 3 lines");
        assertEquals("", ToolOutput.failure(""));
        assertTrue(ToolOutput.refused(text), "refused before it measured: the run may be started again");
        assertFalse(ToolOutput.refused(text.replace("REJECTED", "UNREACHABLE")), "unreachable: a failure");
        assertFalse(ToolOutput.refused(" #bytes #iterations t_min\n" + text), "refused after results: a failure");
    }

    @Test
    void aResultRowWithoutTimeMeasuredNothing() {
        // ib_send_lat's client when it could not read the CPU's clock rate: it exits 0 with inf everywhere.
        String text = """
                 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]
                 2       300          inf            inf          inf      \t       inf         \t-nan   \t\tinf     \t\tinf
                """;
        assertTrue(ToolOutput.noClock(text, 2, 9, 4));
        assertTrue(Double.isNaN(ToolOutput.parseRow(text, 2, 9, 4)));
        assertFalse(ToolOutput.noClock(text.replace("inf      ", "3.50     "), 2, 9, 4), "a time: measured");
        assertFalse(ToolOutput.noClock(text, 4096, 9, 4), "no row of that size");
    }

    @Test
    void kernelCountsAreSummedOverDevices() {
        String text = """
                0: rxe0: pd 3 cq 140 qp 20001 cm_id 20003 mr 9 ctx 2 srq 1
                1: rxe1: pd 1 cq 2 qp 1 cm_id 0 mr 0 ctx 1 srq 0
                """;
        assertEquals(Map.of("pd", 4, "cq", 142, "qp", 20002, "cm_id", 20003, "mr", 9, "srq", 1),
                KernelResources.counts(text));
    }
}
