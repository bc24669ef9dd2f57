package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/** The table a CQ polled for many queue pairs finds what each completion belongs to in ({@link QpNumbers}). */
class QpNumbersTest {

    @Test
    void addGetRemove() {
        QpNumbers<String> t = new QpNumbers<>();
        assertNull(t.get(17));
        assertTrue(t.add(17, "a"));
        assertTrue(t.add(18, "b"));
        assertEquals("a", t.get(17));
        assertEquals("b", t.get(18));
        assertNull(t.get(19));
        assertEquals(2, t.size());
        assertTrue(t.remove(17, "a"));
        assertNull(t.get(17));
        assertEquals("b", t.get(18));
    }

    @Test
    void aNumberStillRegisteredIsNotTakenOver() {
        QpNumbers<String> t = new QpNumbers<>();
        assertTrue(t.add(5, "old"));
        assertFalse(t.add(5, "new")); // the old QP's completions may still be in the CQ
        assertEquals("old", t.get(5));
        assertFalse(t.remove(5, "new")); // only the value registered is removed
        assertEquals("old", t.get(5));
        assertTrue(t.remove(5, "old"));
        assertTrue(t.add(5, "new"));
        assertSame("new", t.get(5));
    }

    @Test
    void colliding0AndNegativeNumbersWork() {
        QpNumbers<Integer> t = new QpNumbers<>();
        int[] numbers = {0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 1 << 16, 2 << 16, 3 << 16};
        for (int n : numbers) {
            assertTrue(t.add(n, n));
        }
        for (int n : numbers) {
            assertEquals(n, t.get(n));
        }
    }

    @Test
    void lookupsAllocateNothing() {
        QpNumbers<String> t = new QpNumbers<>();
        for (int i = 0; i < 100; i++) {
            t.add(1000 + i, "q" + i);
        }
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory
                .getThreadMXBean();
        long sum = 0;
        for (int i = 0; i < 200_000; i++) { // warm up: the measured loop runs compiled
            sum += t.get(1000 + (i % 150)) == null ? 0 : 1;
        }
        long before = mx.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100_000; i++) {
            sum += t.get(1000 + (i % 150)) == null ? 0 : 1;
        }
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        assertTrue(sum > 0);
        assertTrue(allocated < 1024, "100,000 lookups allocated " + allocated + " bytes");
    }

    /** Random adds and removes against a HashMap: the same answers, for every number ever used. */
    @Test
    void randomAddsAndRemovesAgreeWithAMap() {
        RandomCases.run(100, rnd -> {
            QpNumbers<String> t = new QpNumbers<>();
            Map<Integer, String> model = new HashMap<>();
            List<Integer> used = new ArrayList<>();
            int base = rnd.nextInt();
            for (int step = 0; step < 1_000; step++) {
                // Consecutive numbers (as devices hand them out) and some reuse.
                int n = rnd.nextInt(4) == 0 && !used.isEmpty() ? used.get(rnd.nextInt(used.size()))
                        : base + rnd.nextInt(300);
                used.add(n);
                if (rnd.nextBoolean()) {
                    String v = "v" + step;
                    assertEquals(!model.containsKey(n), t.add(n, v));
                    model.putIfAbsent(n, v);
                } else {
                    String v = model.get(n);
                    if (v != null && rnd.nextInt(5) > 0) {
                        assertTrue(t.remove(n, v));
                        model.remove(n);
                    } else {
                        assertFalse(t.remove(n, "not" + step));
                    }
                }
                assertEquals(model.size(), t.size());
            }
            for (int n : used) {
                assertEquals(model.get(n), t.get(n));
            }
        });
    }

    /**
     * A burst of connections on one CQ, then their teardown: the table is rebuilt a logarithmic number of
     * times, not once per change (each rebuild copies every entry, so once per change made a burst of N
     * connections cost N squared).
     */
    @Test
    void aBurstRebuildsTheTableALogarithmicNumberOfTimes() {
        QpNumbers<Integer> t = new QpNumbers<>();
        int n = 10_000;
        // remove() compares values by identity: one boxed value per number.
        Integer[] values = new Integer[20_000];
        java.util.Arrays.setAll(values, i -> Integer.valueOf(i));
        for (int i = 0; i < n; i++) {
            assertTrue(t.add(0x1000 + i, values[i]));
        }
        int grown = t.rebuilds();
        assertTrue(grown <= 14, n + " adds rebuilt the table " + grown + " times");
        for (int i = 0; i < n; i++) {
            assertEquals(i, t.get(0x1000 + i));
        }
        for (int i = 0; i < n; i++) {
            assertTrue(t.remove(0x1000 + i, values[i]));
        }
        assertEquals(0, t.size());
        int shrunk = t.rebuilds() - grown;
        assertTrue(shrunk <= 14, n + " removes rebuilt the table " + shrunk + " times");
        // Churn at a steady size (connections coming and going) rebuilds once per as many changes as entries.
        for (int i = 0; i < 100; i++) {
            t.add(i, values[i]);
        }
        int before = t.rebuilds();
        for (int i = 100; i < 10_100; i++) {
            assertTrue(t.remove(i - 100, values[i - 100]));
            assertTrue(t.add(i, values[i]));
        }
        int churned = t.rebuilds() - before;
        assertTrue(churned <= 20_000 / 100, "20,000 changes at 100 entries rebuilt the table " + churned + " times");
        for (int i = 10_000; i < 10_100; i++) {
            assertEquals(i, t.get(i));
        }
    }

    /**
     * Lookups from another thread while entries are added, removed and the table rebuilt: an entry that
     * stays is always found, with its own value (a reader that saw a value must see the number written with
     * it; a slot is never used twice).
     */
    @Test
    void lookupsDuringChangesFindEveryEntryThatStays() throws Exception {
        QpNumbers<Integer> t = new QpNumbers<>();
        int stay = 64;
        for (int i = 0; i < stay; i++) {
            t.add(i * 7919, i);
        }
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicReference<String> wrong = new java.util.concurrent.atomic.AtomicReference<>();
        Thread reader = new Thread(() -> {
            while (!done.get() && wrong.get() == null) {
                for (int i = 0; i < stay; i++) {
                    Integer v = t.get(i * 7919);
                    if (v == null || v != i) {
                        wrong.compareAndSet(null, "entry " + i + " read as " + v);
                    }
                }
            }
        }, "qp-numbers-reader");
        reader.start();
        try {
            Integer[] others = new Integer[300];
            java.util.Arrays.setAll(others, i -> Integer.valueOf(-1000 - i));
            for (int round = 0; round < 200; round++) {
                for (int i = 0; i < 300; i++) {
                    assertTrue(t.add(1_000_000 + round * 1000 + i, others[i]));
                }
                for (int i = 0; i < 300; i++) {
                    assertTrue(t.remove(1_000_000 + round * 1000 + i, others[i]));
                }
            }
        } finally {
            done.set(true);
            reader.join(10_000);
        }
        assertNull(wrong.get());
        assertEquals(stay, t.size());
    }
}
