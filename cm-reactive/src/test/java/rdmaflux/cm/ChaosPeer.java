package rdmaflux.cm;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import reactor.core.publisher.Mono;

import rdmaflux.testing.ProcessSample;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The peer process of a chaos run on hosts 2..N ({@link HostsPeerMain}'s {@code chaos} mode): an echo server
 * on a fixed port, a member of the run's multicast group, and {@link ChaosStream}s to the echo servers of
 * other peer hosts. It reports on stdout, one line each, for {@link ChaosHostsIT} to judge:
 * {@code READY} (then its streams start once {@code STOPFILE.go} exists),
 * {@code FAILED <stream> <millis> <established> <typed> <exception>},
 * {@code VIOLATION <what>}, {@code PROGRESS <stream>=<messages>... mcast=<datagrams>}, and once the stop file
 * appears and its streams ended {@code STOPPED}, then once {@code STOPFILE.settle} appears and everything it
 * made is closed, {@code SETTLED} or {@code UNSETTLED <what differs>} against
 * the baseline it took after a warm-up connection to itself, before its server listened.
 */
final class ChaosPeer {
    /** A step of the peer's own: scaled, as a restarted peer competes with the other hosts for the CPU. */
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofSeconds(60));
    /**
     * The warm-up connection: a JVM's first connection (class loading, linking and the native bindings'
     * set-up) takes 35 to 40 s of CPU under emulation, and a restarted peer shares its host's core.
     */
    private static final Duration WARM_UP = RdmaTestEnv.scaled(Duration.ofSeconds(180));
    private final List<ChaosStream> streams = new ArrayList<>();
    private final AtomicLong datagrams = new AtomicLong();
    private final AtomicInteger lastSeq = new AtomicInteger(-1);
    /** The group membership now: joined again after its device was removed and came back. */
    private final AtomicReference<MulticastMembership> member = new AtomicReference<>();
    private volatile boolean leaving;

    private ChaosPeer() {
    }

    /**
     * @param port the echo server's port
     * @param group the multicast group
     * @param stop the file whose appearance ends the run
     * @param targets {@code HOST:PORT} of other peers' echo servers, one stream each
     */
    static void run(int port, InetAddress group, Path stop, List<String> targets) throws InterruptedException {
        new ChaosPeer().go(port, group, stop, targets);
    }

    private void go(int port, InetAddress group, Path stop, List<String> targets) throws InterruptedException {
        phase("main");
        Resources.sharedDomain();
        // The warm-up's server is not the run's: no other host can connect while the baseline is taken.
        RdmaServer warm = HostsPeerMain.serve(0);
        echoOnce(warm.address(), WARM_UP);
        warm.disposeNow(T);
        phase("warmed up");
        ProcessSample baseline = ProcessSample.settled(null, T);
        // On the wildcard address: a server bound to the device's address ends when the device is removed, one
        // on no device listens on and accepts again once a device is back (docs/reliability.md).
        RdmaServer server = HostsPeerMain.serve(new InetSocketAddress(port));
        phase("ready");
        say("READY");
        join(group);
        // Streams start once every peer listens (the run's start), or at once in a peer started again.
        awaitFile(stop.resolveSibling(stop.getFileName() + ".go"));
        int self = Integer.parseInt(System.getenv("RDMAFLUX_SANDBOX_HOST").trim());
        for (String t : targets) {
            String[] hp = t.split(":");
            int to = Integer.parseInt(hp[0]);
            for (int i = 0; i < ChaosHostsIT.STREAMS_PER_PAIR; i++) {
                streams.add(new ChaosStream("h" + self + "h" + to + "s" + i, self, to,
                        new InetSocketAddress(rdmaflux.testing.SandboxHosts.address(to), Integer.parseInt(hp[1])),
                        ChaosHostsIT.options(), ChaosHostsIT.hangBound(), self * 1000L + to * 10L + i, printing())
                        .start());
            }
        }
        long lastProgress = 0;
        while (!Files.exists(stop)) {
            if (System.currentTimeMillis() - lastProgress > 3_000) {
                lastProgress = System.currentTimeMillis();
                StringBuilder p = new StringBuilder("PROGRESS");
                for (ChaosStream s : streams) {
                    p.append(' ').append(s.name).append('=').append(s.messages.get());
                }
                say(p.append(" mcast=").append(datagrams.get()).toString());
            }
            Thread.sleep(200);
        }
        for (ChaosStream s : streams) {
            s.stop();
        }
        for (ChaosStream s : streams) {
            if (!s.join(T)) {
                say("VIOLATION stream " + s.name + " did not stop within " + T);
            }
        }
        // Every peer's streams stop before any server goes, or they would see it go as a failure.
        say("STOPPED");
        awaitFile(stop.resolveSibling(stop.getFileName() + ".settle"));
        leaving = true;
        MulticastMembership m = member.get();
        if (m != null) {
            m.dispose();
            m.onDispose().block(T);
        }
        // Once the other hosts' connections are gone: the test stopped its streams before the stop file.
        server.disposeNow(T);
        ProcessSample end = ProcessSample.settled(baseline, RdmaTestEnv.scaled(Duration.ofSeconds(90)));
        String diff = end.differenceFrom(baseline);
        say(diff.isEmpty() ? "SETTLED" : "UNSETTLED " + diff + " threads now " + ProcessSample.threadNames());
    }

    /**
     * Joins the group, and again a second after the membership or the join fails (its device was removed),
     * as an application that wants to stay a member does; each failure is reported for the ledger to judge.
     */
    private void join(InetAddress group) {
        RdmaMulticast.join(group, MulticastOptions.builder().localAddress(RdmaTestEnv.address())
                .joinTimeout(CrossHostsIT.JOIN).build()).subscribe(m -> {
                    member.set(m);
                    m.datagrams().subscribe(this::datagram, e -> {
                        say("FAILED mcast " + System.currentTimeMillis() + " true "
                                + (e instanceof rdmaflux.verbs.RdmaException) + " " + e);
                        joinAgain(group);
                    });
                }, e -> {
                    say("FAILED mcast " + System.currentTimeMillis() + " false "
                            + (e instanceof rdmaflux.verbs.RdmaException) + " " + e);
                    joinAgain(group);
                });
    }

    private void joinAgain(InetAddress group) {
        if (!leaving) {
            Mono.delay(Duration.ofSeconds(1)).subscribe(x -> join(group));
        }
    }

    private void datagram(Datagram d) {
        int seq = MulticastTestSupport.seq(d);
        if (!MulticastTestSupport.isPayload(d, seq, ChaosHostsIT.DATAGRAM)) {
            say("VIOLATION multicast datagram " + seq + " corrupt");
        } else {
            int before = lastSeq.getAndSet(seq);
            if (seq <= before) {
                say("VIOLATION multicast datagram " + seq + " after " + before + ": duplicated or reordered");
            }
        }
        datagrams.incrementAndGet();
    }

    /**
     * One connection to an echo server, one checked echo, closed: done before a baseline is taken, so
     * that it has the threads and pools a process's first connection starts for good.
     */
    static void echoOnce(InetSocketAddress server, Duration within) {
        // A handshake bound for a loaded machine: a restarted peer's first connect was seen to pass 20 s.
        RdmaConnection c = RdmaConnection.connect(server, CrossHostsIT.SLOW_HANDSHAKE).block(within);
        java.util.concurrent.LinkedBlockingQueue<Object> inbox = new java.util.concurrent.LinkedBlockingQueue<>();
        c.receiveBytes().subscribe(inbox::add, inbox::add);
        Inbox.take(inbox, within); // the advert
        c.send(Payloads.message(3, 3000)).block(within);
        Payloads.verify(Inbox.take(inbox, within), 3, 3000);
        c.disposeNow(within);
    }

    private static ChaosStream.Events printing() {
        return new ChaosStream.Events() {
            @Override
            public void connected(ChaosStream s, long at) {
            }

            @Override
            public void failed(ChaosStream s, long at, Throwable e, boolean established) {
                boolean typed = e == null || e instanceof rdmaflux.verbs.RdmaException;
                say("FAILED " + s.name + " " + at + " " + established + " " + typed + " " + ChaosLedger.describe(e));
            }

            @Override
            public void closed(ChaosStream s, long at) {
            }

            @Override
            public void violation(ChaosStream s, String what) {
                say("VIOLATION " + s.name + ": " + what.replace('\n', ' '));
            }
        };
    }

    /** Waits, without a bound, for the test to create {@code file}: the test bounds the run and kills the peer. */
    private static void awaitFile(Path file) {
        org.awaitility.Awaitility.await().forever().pollInterval(java.time.Duration.ofMillis(200))
                .until(() -> Files.exists(file));
    }

    /** Where a (re)start spends its time, on stderr, which the run's log shows: from the process's start. */
    private static void phase(String what) {
        long ms = ProcessHandle.current().info().startInstant()
                .map(t -> java.time.Duration.between(t, java.time.Instant.now()).toMillis()).orElse(-1L);
        System.err.println("chaos-peer: " + what + " at +" + ms + " ms");
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
