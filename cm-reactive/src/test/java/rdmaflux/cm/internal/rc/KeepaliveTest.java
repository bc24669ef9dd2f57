package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

class KeepaliveTest {
    /** Timers fired by hand, one tick at a time. */
    private final List<Runnable> due = new ArrayList<>();
    private final List<Long> delays = new ArrayList<>();
    private int probes;

    private Keepalive keepalive(long idleNanos) {
        return new Keepalive((task, delay) -> {
            due.add(task);
            delays.add(delay);
            Disposable cancel = () -> due.remove(task);
            return cancel;
        }, idleNanos, () -> probes++);
    }

    private void tick() {
        Runnable next = due.removeFirst();
        next.run();
    }

    @Test
    void probesAfterTwoIdleTicksAndTicksEveryHalfPeriod() {
        Keepalive k = keepalive(4_000);
        k.start();
        tick();
        assertEquals(0, probes, "one idle tick is not enough: the last completion may have come just before it");
        tick();
        assertEquals(1, probes);
        tick();
        tick();
        assertEquals(2, probes, "an unanswered peer keeps being probed");
        assertTrue(delays.stream().allMatch(d -> d == 2_000), "ticks every half period: " + delays);
    }

    @Test
    void trafficBetweenTicksDefersTheProbe() {
        Keepalive k = keepalive(4_000);
        k.start();
        for (int i = 0; i < 10; i++) {
            k.touch();
            tick();
        }
        assertEquals(0, probes);
        tick();
        tick();
        assertEquals(1, probes, "two idle ticks after the last completion");
    }

    @Test
    void offAndStoppedKeepalivesScheduleNothing() {
        Keepalive off = keepalive(0);
        off.start();
        assertEquals(List.of(), due);
        Keepalive k = keepalive(4_000);
        k.start();
        k.stop();
        assertEquals(List.of(), due, "stop cancels the pending tick");
        k.start();
        assertEquals(List.of(), due, "a stopped keepalive does not start again");
    }
}
