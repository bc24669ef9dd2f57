package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

class ChaosScheduleTest {
    private static final Duration LONG_CUT = Duration.ofSeconds(15);

    @Test
    void theSameSeedGivesTheSameScheduleAndAnotherSeedAnother() {
        assertEquals(ChaosSchedule.draw(42, Duration.ofMinutes(5), 3, LONG_CUT),
                ChaosSchedule.draw(42, Duration.ofMinutes(5), 3, LONG_CUT));
        assertNotEquals(ChaosSchedule.draw(42, Duration.ofMinutes(5), 3, LONG_CUT).faults(),
                ChaosSchedule.draw(43, Duration.ofMinutes(5), 3, LONG_CUT).faults());
    }

    @Test
    void everyScheduleHasEveryKindOnPeerHostsOneAtATimePerHost() {
        for (long seed = 0; seed < 500; seed++) {
            ChaosSchedule s = ChaosSchedule.draw(seed, Duration.ofSeconds(30), 3, LONG_CUT);
            Set<ChaosSchedule.Kind> kinds = EnumSet.noneOf(ChaosSchedule.Kind.class);
            List<ChaosSchedule.Fault> f = s.faults();
            for (int i = 0; i < f.size(); i++) {
                ChaosSchedule.Fault a = f.get(i);
                kinds.add(a.kind());
                assertTrue(a.host() == 2 || a.host() == 3, a.toString());
                if (a.kind() == ChaosSchedule.Kind.LINK_CUT_LONG) {
                    assertTrue(a.forMillis() >= LONG_CUT.toMillis(), a.toString());
                }
                for (int j = i + 1; j < f.size(); j++) {
                    ChaosSchedule.Fault b = f.get(j);
                    if (a.host() == b.host()) {
                        assertTrue(b.atMillis() >= a.atMillis() + a.forMillis(),
                                "seed " + seed + ": " + a + " and " + b + " at once on one host");
                    }
                }
            }
            assertEquals(EnumSet.allOf(ChaosSchedule.Kind.class), kinds, "seed " + seed);
            List<ChaosSchedule.Kind> required = f.stream().filter(ChaosSchedule.Fault::required)
                    .map(ChaosSchedule.Fault::kind).sorted().toList();
            assertEquals(List.of(ChaosSchedule.Kind.values()), required, "seed " + seed + ": the first of each kind");
            assertTrue(f.size() <= 7, "seed " + seed + ": a short schedule stays short: " + f);
        }
    }

    @Test
    void theFirstRestartsGoToDifferentHostsEachAfterItsHostsOtherFirstFaults() {
        long restartKinds = java.util.Arrays.stream(ChaosSchedule.Kind.values()).filter(k -> k.restartsPeer).count();
        for (int hosts = 3; hosts <= 4; hosts++) {
            for (long seed = 0; seed < 200; seed++) {
                List<ChaosSchedule.Fault> first = ChaosSchedule.draw(seed, Duration.ofSeconds(30), hosts, LONG_CUT)
                        .faults().stream().filter(ChaosSchedule.Fault::required).toList();
                for (int h = 2; h <= hosts; h++) {
                    int host = h;
                    List<ChaosSchedule.Fault> on = first.stream().filter(f -> f.host() == host).toList();
                    long restarts = on.stream().filter(f -> f.kind().restartsPeer).count();
                    assertTrue(restarts <= (restartKinds + hosts - 2) / (hosts - 1),
                            "seed " + seed + ", " + hosts + " hosts: " + first);
                    for (int i = 1; i < on.size(); i++) {
                        assertTrue(on.get(i).kind().restartsPeer || !on.get(i - 1).kind().restartsPeer,
                                "seed " + seed + ": a restart before another kind on host " + h + ": " + on);
                    }
                }
            }
        }
    }

    @Test
    void aLongerRunHasMoreFaults() {
        int shortRun = ChaosSchedule.draw(7, Duration.ofSeconds(30), 3, LONG_CUT).faults().size();
        int longRun = ChaosSchedule.draw(7, Duration.ofMinutes(30), 3, LONG_CUT).faults().size();
        assertTrue(longRun > 10 * shortRun / 2, shortRun + " vs " + longRun);
    }
}
