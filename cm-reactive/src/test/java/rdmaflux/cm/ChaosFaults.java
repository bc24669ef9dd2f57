package rdmaflux.cm;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.testing.RemoteProcess;
import rdmaflux.testing.SandboxHosts;

/**
 * Injects a {@link ChaosSchedule} into the sandbox: one thread per peer host takes that host's faults in
 * order (each no earlier than its time, and only a quiet time after the previous one recovered), so that
 * different hosts' faults overlap. Each fault is recorded in the {@link ChaosLedger} as it is requested, takes
 * effect and recovers; one that cannot be injected is a violation.
 */
final class ChaosFaults {
    /** The host's RDMA device and its netdev, as scripts/sandbox/hosts makes them. */
    private static final String DEVICE = "rxe0";
    private static final String NETDEV = "eth0";
    private final ChaosSchedule schedule;
    private final ChaosLedger ledger;
    private final ChaosPeers peers;
    private final Duration startup;
    private final Duration longCut;
    private final Duration quiet;
    private final List<Thread> threads = new ArrayList<>();
    private final Map<ChaosSchedule.Kind, Integer> injected = new ConcurrentHashMap<>();
    private volatile boolean aborted;
    private final java.util.concurrent.atomic.AtomicInteger skipped = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * @param startup how long a host's boot or a peer's start may take
     * @param longCut the least a long cut lasts here: the schedule's durations are the same for a seed on
     *                any machine, the detection bound they must outlast grows on a slower one
     * @param quiet how long a host stays without a fault after one recovered. A restart takes far longer
     *              than the schedule's spacing, so a late host's faults would otherwise follow each other
     *              at once, and the streams to it would get no moment to reconnect and exchange messages.
     */
    ChaosFaults(ChaosSchedule schedule, ChaosLedger ledger, ChaosPeers peers, Duration startup, Duration longCut,
                Duration quiet) {
        this.schedule = schedule;
        this.ledger = ledger;
        this.peers = peers;
        this.startup = startup;
        this.longCut = longCut;
        this.quiet = quiet;
    }

    /**
     * @param t0 the schedule's start
     * @param length after it, only the faults {@linkplain ChaosSchedule.Fault#required required} still start
     */
    void start(long t0, Duration length) {
        Map<Integer, List<ChaosSchedule.Fault>> byHost = new TreeMap<>();
        for (ChaosSchedule.Fault f : schedule.faults()) {
            byHost.computeIfAbsent(f.host(), h -> new ArrayList<>()).add(f);
        }
        byHost.forEach((h, faults) -> threads.add(Thread.ofPlatform().daemon().name("chaos-faults-h" + h).start(() -> {
            long free = t0;
            for (ChaosSchedule.Fault f : faults) {
                try {
                    sleepUntil(Math.max(t0 + f.atMillis(), free));
                    if (aborted) {
                        return;
                    }
                    if (!f.required() && System.currentTimeMillis() - t0 > length.toMillis()) {
                        skipped.incrementAndGet();
                        continue;
                    }
                    System.out.println("chaos: " + f + " starts at +" + (System.currentTimeMillis() - t0) / 1000
                            + " s");
                    inject(f);
                    injected.merge(f.kind(), 1, Integer::sum);
                    free = System.currentTimeMillis() + quiet.toMillis();
                } catch (RuntimeException | AssertionError e) {
                    ledger.violation("fault " + f + " could not be injected: " + e);
                    return;
                } catch (InterruptedException e) {
                    return;
                }
            }
        })));
    }

    /** {@return whether every fault was injected and recovered} */
    boolean done() {
        return threads.stream().noneMatch(Thread::isAlive);
    }

    /** Stops injecting, and waits for the faults under way to put back what the lane's later classes need. */
    void abort() throws InterruptedException {
        aborted = true;
        threads.forEach(Thread::interrupt);
        for (Thread t : threads) {
            if (!t.join(startup)) {
                System.out.println("chaos: " + t.getName() + " still runs after " + startup);
            }
        }
    }

    /** {@return the faults left out: reached after the length, their host's restarts having lagged} */
    int skipped() {
        return skipped.get();
    }

    Map<ChaosSchedule.Kind, Integer> injected() {
        return new TreeMap<>(injected);
    }

    private void inject(ChaosSchedule.Fault f) throws InterruptedException {
        int h = f.host();
        ChaosLedger.Window w = ledger.begin(f.kind(), h);
        switch (f.kind()) {
            case LINK_CUT_SHORT, LINK_CUT_LONG -> {
                SandboxHosts.link(h, false);
                w.effective = System.currentTimeMillis();
                Thread.sleep(f.kind() == ChaosSchedule.Kind.LINK_CUT_LONG
                        ? Math.max(f.forMillis(), longCut.toMillis()) : f.forMillis());
                SandboxHosts.link(h, true);
            }
            case PROCESS_KILL -> {
                peers.kill(h);
                w.effective = System.currentTimeMillis();
                Thread.sleep(f.forMillis());
                restartPeer(h);
            }
            case HOST_RESTART -> {
                peers.crashing(h);
                SandboxHosts.kill(h);
                w.effective = System.currentTimeMillis();
                Thread.sleep(f.forMillis());
                boot(h);
                restartPeer(h);
            }
            case DEVICE_REMOVE -> {
                boolean removed = false;
                try {
                    removeDevice(h, w);
                    removed = true;
                    Thread.sleep(f.forMillis());
                } finally {
                    // Even when the run is aborted (an interrupt): the lane's later classes need the device.
                    boolean interrupted = Thread.interrupted();
                    try {
                        if (!removed) {
                            // A delete cut short goes on in the kernel until the peer lets go of the device:
                            // an add then met the old device (File exists), and the delete, finished once the
                            // run's peers were gone, left the host without one for the later classes.
                            peers.kill(h);
                        }
                        addDevice(h);
                    } finally {
                        if (interrupted) {
                            Thread.currentThread().interrupt();
                        }
                    }
                }
                // The peer lives on: its server listens on the wildcard address, and its streams and its
                // membership come back by themselves once the device is back.
            }
        }
        w.recovered = System.currentTimeMillis();
        System.out.println("chaos: " + w + " recovered after " + (w.recovered - w.requested) + " ms");
    }

    /**
     * Removes the host's device under its running peer, which must let go of it: the kernel finishes
     * {@code rdma link delete} only once no process holds anything on the device (rxe cannot take a process's
     * context away from it), and rdmaflux frees what it holds on a removed device once everything on it ended.
     */
    private void removeDevice(int h, ChaosLedger.Window w) {
        try (RemoteProcess delete = SandboxHosts.start(h, List.of("sh", "-c",
                "echo DELETING; rdma link delete " + DEVICE + "; echo \"DELETED $?\""))) {
            delete.awaitLine("DELETING"::equals, startup);
            w.effective = System.currentTimeMillis();
            Duration bound = RdmaTestEnv.scaled(Duration.ofSeconds(30));
            int rc = delete.waitFor(bound);
            if (rc != 0 || !delete.stdoutLines().contains("DELETED 0")) {
                throw new AssertionError("rdma link delete on host " + h + " failed: " + delete.stdoutLines() + " "
                        + delete.stderr());
            }
            System.out.println("chaos: device removal on host " + h + " done with the peer process running, after "
                    + (System.currentTimeMillis() - w.effective) + " ms");
        }
    }

    /**
     * {@code rdma link add} of the host's device, as scripts/sandbox/hosts made it; tried again, within
     * {@code startup}, while the device it replaces is still being deleted (File exists).
     */
    private void addDevice(int h) {
        long deadline = System.currentTimeMillis() + startup.toMillis();
        for (int attempt = 1;; attempt++) {
            try (RemoteProcess add = SandboxHosts.start(h, List.of("rdma", "link", "add", DEVICE, "type", "rxe",
                    "netdev", NETDEV))) {
                if (add.waitFor(startup) == 0) {
                    if (attempt > 1) {
                        System.out.println("chaos: device added on host " + h + " at attempt " + attempt);
                    }
                    return;
                }
                if (!add.stderr().contains("File exists") || System.currentTimeMillis() > deadline) {
                    throw new AssertionError("rdma link add on host " + h + " failed (attempt " + attempt + "): "
                            + add.stderr());
                }
            }
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while adding the device on host " + h, e);
            }
        }
    }

    /** Boots a crashed host, once its VM's scripts have noticed that qemu quit. */
    private void boot(int h) throws InterruptedException {
        long deadline = System.currentTimeMillis() + startup.toMillis();
        while (true) {
            try {
                SandboxHosts.boot(h, startup);
                return;
            } catch (AssertionError e) {
                if (!String.valueOf(e.getMessage()).contains("is running") || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    private void restartPeer(int h) {
        peers.start(h);
        peers.awaitReady(h, startup);
    }

    private static void sleepUntil(long at) throws InterruptedException {
        long left = at - System.currentTimeMillis();
        if (left > 0) {
            Thread.sleep(left);
        }
    }
}
