package rdmaflux.cm;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The faults of a chaos run ({@link ChaosHostsIT}), drawn from a seed: the same seed, length and hosts
 * give the same schedule, so a failing run is repeated by passing its seed again.
 *
 * <p>Each fault hits one peer host (2..N; host 1 runs the test). One host takes its faults one after the other,
 * because a restarting host cannot also have its link cut (qemu's monitor is gone while it is down); different
 * hosts' faults overlap. Every kind occurs at least once in any schedule, the short one of CI included, and the
 * first of each kind that restarts the peer goes to another host than the one before, so that the restarts, the
 * slow part of a run, go side by side. A fault's {@code at} is the earliest it may start: the one before it on its
 * host must have recovered first (a restarted peer takes tens of seconds to start under emulation), so faults
 * start later than planned; after the length only the first of each kind still does.
 *
 * @param seed the seed it was drawn from
 * @param faults by start time
 */
record ChaosSchedule(long seed, List<Fault> faults) {

    /** What is done to a host. */
    enum Kind {
        /** The host's wire is cut for less than the transport's retry time: nothing may fail. */
        LINK_CUT_SHORT(false),
        /** The wire is cut for longer than a connection's detection bound: every connection fails. */
        LINK_CUT_LONG(false),
        /** The peer process is killed (SIGKILL), then started again. */
        PROCESS_KILL(true),
        /** The host's VM stops dead (qemu {@code quit}), boots again, and the peer starts again. */
        HOST_RESTART(true),
        /** {@code rdma link delete} of the host's rxe device under its peer, then {@code rdma link add}. */
        DEVICE_REMOVE(false);

        /** Whether the peer process starts again after it. */
        final boolean restartsPeer;

        Kind(boolean restartsPeer) {
            this.restartsPeer = restartsPeer;
        }
    }

    /**
     * @param kind what
     * @param host which host (2..N)
     * @param atMillis earliest start, from the schedule's start
     * @param forMillis how long the fault lasts (the cut, or the time down before the restart)
     * @param required the first of its kind: injected even when the faults before it on its host lagged
     *                 past the schedule's length (restarts take longer than planned), so that every run
     *                 has every kind; any other fault reached after the length is left out
     */
    record Fault(Kind kind, int host, long atMillis, long forMillis, boolean required) {
        @Override
        public String toString() {
            return kind + "@h" + host + "+" + atMillis / 1000 + "s/" + forMillis + "ms";
        }
    }

    /**
     * Draws a schedule.
     *
     * @param seed the seed
     * @param length how long the faults go on being started
     * @param hosts hosts in the run (faults hit 2..hosts)
     * @param longCut how long a long cut lasts at least (the detection bound)
     * @return the schedule
     */
    static ChaosSchedule draw(long seed, Duration length, int hosts, Duration longCut) {
        if (hosts < 2) {
            throw new IllegalArgumentException("a chaos run needs a peer host");
        }
        Random r = new Random(seed);
        long[] free = new long[hosts + 1];
        // The first faults start staggered, so that those of different hosts overlap without starting together.
        for (int h = 2; h <= hosts; h++) {
            free[h] = 2_000 + r.nextInt(6_000);
        }
        List<Fault> faults = new ArrayList<>();
        // The first of each kind: a restart takes a peer's start under emulation (minutes on a loaded machine),
        // so the restarts go to different hosts, where they run side by side, each after its host's other faults.
        Map<Integer, List<Kind>> first = firstKinds(r, hosts);
        for (int h = 2; h <= hosts; h++) {
            for (Kind kind : first.get(h)) {
                free[h] = add(faults, kind, h, free[h], true, r, longCut);
            }
        }
        while (true) {
            int host = 2;
            for (int h = 3; h <= hosts; h++) {
                host = free[h] < free[host] ? h : host;
            }
            if (free[host] > length.toMillis()) {
                break;
            }
            free[host] = add(faults, Kind.values()[r.nextInt(Kind.values().length)], host, free[host], false, r,
                    longCut);
        }
        faults.sort(Comparator.comparingLong(Fault::atMillis));
        return new ChaosSchedule(seed, List.copyOf(faults));
    }

    /**
     * Deals the first fault of each kind to the peer hosts: the restarts in turn, one host after another, then
     * each other kind to the host with the fewest faults so far; on each host those come before its restarts.
     */
    private static Map<Integer, List<Kind>> firstKinds(Random r, int hosts) {
        List<Kind> restarts = new ArrayList<>();
        List<Kind> others = new ArrayList<>();
        for (Kind k : Kind.values()) {
            (k.restartsPeer ? restarts : others).add(k);
        }
        Collections.shuffle(restarts, r);
        Collections.shuffle(others, r);
        Map<Integer, List<Kind>> dealt = new TreeMap<>();
        for (int h = 2; h <= hosts; h++) {
            dealt.put(h, new ArrayList<>());
        }
        for (int i = 0; i < restarts.size(); i++) {
            dealt.get(2 + i % (hosts - 1)).add(restarts.get(i));
        }
        for (Kind k : others) {
            int fewest = 2;
            for (int h = 3; h <= hosts; h++) {
                fewest = dealt.get(h).size() < dealt.get(fewest).size() ? h : fewest;
            }
            dealt.get(fewest).addFirst(k);
        }
        return dealt;
    }

    /**
     * Adds a fault at {@code at} on {@code host}.
     *
     * @return when the host is free for the next one, as planned
     */
    private static long add(List<Fault> faults, Kind kind, int host, long at, boolean required, Random r,
                            Duration longCut) {
        long lasts = switch (kind) {
            case LINK_CUT_SHORT -> 300 + r.nextInt(900);
            case LINK_CUT_LONG -> longCut.toMillis() + r.nextInt(5_000);
            case PROCESS_KILL, HOST_RESTART, DEVICE_REMOVE -> r.nextInt(8_000);
        };
        faults.add(new Fault(kind, host, at, lasts, required));
        // Restarts take a peer JVM's start on top; the next fault on the host waits for it anyway.
        return at + lasts + 3_000 + r.nextInt(12_000);
    }
}
