package rdmaflux.cm.internal.cq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/** The reservation arithmetic of shared CQs ({@link CqReservations}): no CQ is ever over-committed. */
class CqReservationsTest {

    /** A CQ stand-in that remembers the size it was made with. */
    private record Cq(int id, int capacity) {
    }

    private final List<Cq> made = new ArrayList<>();

    private Cq make(int capacity) {
        Cq c = new Cq(made.size(), capacity);
        made.add(c);
        return c;
    }

    @Test
    void fillsACqThenMakesANewOne() {
        CqReservations<Cq> r = new CqReservations<>(100);
        Cq a = r.reserve(40, this::make);
        assertSame(a, r.reserve(40, this::make));
        assertEquals(80, r.reserved(a));
        Cq b = r.reserve(40, this::make); // 20 left in a: not enough
        assertNotSame(a, b);
        assertSame(a, r.reserve(20, this::make)); // exactly what is left in a
        assertEquals(100, r.reserved(a));
        assertEquals(2, made.size());
        assertEquals(100, b.capacity());
    }

    @Test
    void aReservationLargerThanTheStandardSizeGetsACqOfItsOwnSize() {
        CqReservations<Cq> r = new CqReservations<>(100);
        Cq big = r.reserve(250, this::make);
        assertEquals(250, big.capacity());
        assertEquals(250, r.capacity(big));
        assertNotSame(big, r.reserve(1, this::make));
    }

    @Test
    void theLastReturnEmptiesTheCqAndItLeavesTheSet() {
        CqReservations<Cq> r = new CqReservations<>(100);
        Cq a = r.reserve(30, this::make);
        r.reserve(30, this::make);
        assertFalse(r.release(a, 30));
        assertTrue(r.release(a, 30));
        assertEquals(0, r.size());
        assertThrows(IllegalStateException.class, () -> r.release(a, 1));
        assertNotSame(a, r.reserve(30, this::make)); // a left: a new CQ
    }

    @Test
    void refusesBadAmounts() {
        CqReservations<Cq> r = new CqReservations<>(100);
        assertThrows(IllegalArgumentException.class, () -> r.reserve(0, this::make));
        Cq a = r.reserve(10, this::make);
        assertThrows(IllegalStateException.class, () -> r.release(a, 11));
        assertThrows(IllegalStateException.class, () -> r.release(a, 0));
        assertThrows(IllegalArgumentException.class, () -> new CqReservations<Cq>(0));
    }

    @Test
    void aCqThatCannotBeMadeReservesNothing() {
        CqReservations<Cq> r = new CqReservations<>(100);
        assertThrows(IllegalStateException.class, () -> r.reserve(10, c -> {
            throw new IllegalStateException("ENOMEM");
        }));
        assertEquals(0, r.size());
    }

    /**
     * Random joins and leaves: every CQ's reservations always sum to at most its capacity and to exactly
     * what the set says, a CQ leaves with its last connection, and a join only makes a CQ when none had room.
     */
    @Test
    void randomJoinsAndLeavesNeverOverCommitACq() {
        RandomCases.run(200, rnd -> {
            made.clear();
            int standard = 1 + rnd.nextInt(512);
            CqReservations<Cq> r = new CqReservations<>(standard);
            List<Map.Entry<Cq, Integer>> live = new ArrayList<>();
            Map<Cq, Integer> model = new HashMap<>();
            for (int step = 0; step < 400; step++) {
                if (live.isEmpty() || rnd.nextInt(100) < 55) {
                    int entries = 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? 2 * standard : Math.max(1, standard / 3));
                    boolean roomBefore = model.entrySet().stream()
                            .anyMatch(e -> e.getKey().capacity() - e.getValue() >= entries);
                    int before = made.size();
                    Cq c = r.reserve(entries, this::make);
                    assertEquals(!roomBefore, made.size() == before + 1, "a CQ is made only when none has room");
                    model.merge(c, entries, Integer::sum);
                    live.add(Map.entry(c, entries));
                } else {
                    Map.Entry<Cq, Integer> leave = live.remove(rnd.nextInt(live.size()));
                    Cq c = leave.getKey();
                    int left = model.merge(c, -leave.getValue(), Integer::sum);
                    assertEquals(left == 0, r.release(c, leave.getValue()), "empty exactly when nothing is left");
                    if (left == 0) {
                        model.remove(c);
                    }
                }
                assertEquals(model.size(), r.size());
                for (Map.Entry<Cq, Integer> e : model.entrySet()) {
                    assertEquals(e.getValue(), r.reserved(e.getKey()));
                    assertTrue(e.getValue() <= e.getKey().capacity(), "over-committed: " + e);
                    assertTrue(e.getKey().capacity() >= standard);
                }
            }
        });
    }
}
