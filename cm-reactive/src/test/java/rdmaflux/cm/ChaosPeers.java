package rdmaflux.cm;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.testing.RemoteProcess;
import rdmaflux.testing.SandboxHosts;

/**
 * The {@link ChaosPeer} processes of a chaos run, one per peer host, started again after each fault that
 * ends them; their output is read as it comes and handed to the {@link ChaosLedger}. A peer that exits
 * without being killed, or whose JVM reports a crash, is a violation.
 *
 * <p>Used by the test thread and the fault threads (one per host): per-host state is only touched by that
 * host's fault thread and, for reading, by the test thread, hence the concurrent maps.
 */
final class ChaosPeers {
    static final int PORT = 7490;
    private final int hosts;
    private final InetAddress group;
    private final Path stop;
    private final ChaosLedger ledger;
    private final Map<Integer, RemoteProcess> running = new ConcurrentHashMap<>();
    private final Map<RemoteProcess, Integer> linesRead = new ConcurrentHashMap<>();
    private final Set<RemoteProcess> ended = ConcurrentHashMap.newKeySet();
    private final Map<Integer, Map<String, Long>> progress = new ConcurrentHashMap<>();

    ChaosPeers(int hosts, InetAddress group, Path stop, ChaosLedger ledger) {
        this.hosts = hosts;
        this.group = group;
        this.stop = stop;
        this.ledger = ledger;
    }

    /** Starts host {@code h}'s peer; its streams go to the peers of the hosts above it. */
    void start(int h) {
        List<String> args = new ArrayList<>(List.of("chaos", Integer.toString(PORT), group.getHostAddress(),
                stop.toString()));
        for (int to = h + 1; to <= hosts; to++) {
            args.add(to + ":" + PORT);
        }
        progress.remove(h);
        running.put(h, SandboxHosts.startJava(h, HostsPeerMain.class, args.toArray(String[]::new)));
    }

    void awaitReady(int h, Duration within) {
        running.get(h).awaitLine("READY"::equals, within);
    }

    /** Every peer is ready: their streams start (those of a peer started later start at once). */
    void go() throws java.io.IOException {
        Files.writeString(stop.resolveSibling(stop.getFileName() + ".go"), "go\n");
    }

    /** Kills host {@code h}'s peer (SIGKILL) and waits until it is gone. */
    void kill(int h) {
        RemoteProcess p = running.get(h);
        ended.add(p);
        p.kill();
    }

    /** Host {@code h} is about to crash: its peer dies with it. */
    void crashing(int h) {
        ended.add(running.get(h));
    }

    /** Reads what the peers printed since the last call and judges it. */
    void poll() {
        for (Map.Entry<Integer, RemoteProcess> e : running.entrySet()) {
            int h = e.getKey();
            RemoteProcess p = e.getValue();
            if (ended.contains(p) && SandboxHosts.crashed(h)) {
                continue;
            }
            List<String> lines = p.stdoutLines();
            int from = linesRead.getOrDefault(p, 0);
            for (String line : lines.subList(Math.min(from, lines.size()), lines.size())) {
                read(h, line);
            }
            linesRead.put(p, lines.size());
            if (!ended.contains(p) && p.exitCode().isPresent() && !Files.exists(stop)) {
                ended.add(p);
                ledger.violation("the peer on host " + h + " exited (" + p.exitCode().getAsInt() + "): " + tail(p));
            }
            String err = p.stderr();
            if (!ended.contains(p) && (err.contains("SIGSEGV") || err.contains("hs_err") || err.contains("SIGBUS"))) {
                ended.add(p);
                ledger.violation("the peer's JVM on host " + h + " crashed: " + tail(p));
            }
        }
    }

    private void read(int h, String line) {
        String[] f = line.split(" ", 6);
        switch (f[0]) {
            case "FAILED" -> {
                int to = f[1].equals("mcast") ? 1 : Integer.parseInt(f[1].replaceAll(".*h(\\d+)s\\d+$", "$1"));
                ledger.failure("h" + h + ":" + f[1], h, to, Long.parseLong(f[2]), Boolean.parseBoolean(f[3]),
                        Boolean.parseBoolean(f[4]), f.length > 5 ? f[5] : "");
            }
            case "VIOLATION" -> ledger.violation("peer on host " + h + ": " + line.substring(10));
            case "PROGRESS" -> {
                Map<String, Long> m = new HashMap<>();
                for (String kv : line.substring(9).split(" ")) {
                    String[] p = kv.split("=");
                    m.put(p[0], Long.parseLong(p[1]));
                }
                progress.put(h, m);
            }
            default -> {
            }
        }
    }

    /** {@return per host, each peer stream's checked messages and the datagrams its member got} */
    Map<Integer, Map<String, Long>> progress() {
        Map<Integer, Map<String, Long>> m = new HashMap<>();
        progress.forEach((h, p) -> m.put(h, Map.copyOf(p)));
        return m;
    }

    /**
     * Ends the run: the peers stop their streams; once all did, they leave the group, close their servers
     * and, once everything they made is freed, say whether they are back at their baseline.
     *
     * @param within how long that may take
     * @return per host, {@code SETTLED} or what differs
     */
    Map<Integer, String> settle(Duration within) throws java.io.IOException {
        Files.writeString(stop, "stop\n");
        for (RemoteProcess p : running.values()) {
            p.awaitLine("STOPPED"::equals, within);
        }
        poll();
        Files.writeString(stop.resolveSibling(stop.getFileName() + ".settle"), "settle\n");
        Map<Integer, String> verdicts = new HashMap<>();
        for (Map.Entry<Integer, RemoteProcess> e : running.entrySet()) {
            verdicts.put(e.getKey(), e.getValue().awaitLine(l -> l.startsWith("SETTLED")
                    || l.startsWith("UNSETTLED"), within));
        }
        return verdicts;
    }

    /** Kills what still runs; a host that died meanwhile (an aborted restart) is only reported. */
    void close() {
        for (RemoteProcess p : running.values()) {
            try {
                p.close();
            } catch (AssertionError e) {
                System.out.println("chaos: the peer on host " + p.host() + " could not be killed: " + e.getMessage());
            }
        }
    }

    private static String tail(RemoteProcess p) {
        String err = p.stderr();
        return "stdout " + p.stdoutLines() + "; stderr ..." + err.substring(Math.max(0, err.length() - 3000));
    }
}
