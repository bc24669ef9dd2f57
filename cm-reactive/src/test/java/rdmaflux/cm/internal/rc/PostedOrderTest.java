package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/**
 * The posting order of a send queue ({@link PostedOrder}): a completion retires exactly the operations
 * written before it, oldest first, across the ring's wrap, and a refused one leaves without a completion.
 */
class PostedOrderTest {

    @Test
    void aCompletionRetiresWhatWasWrittenBeforeItOldestFirst() {
        PostedOrder o = new PostedOrder(4);
        o.add(3);
        o.add(0);
        o.add(2);
        List<Integer> earlier = new ArrayList<>();
        assertTrue(o.retireThrough(0, earlier::add));
        assertEquals(List.of(3), earlier);
        assertEquals(1, o.size());
        o.add(1);
        o.add(3); // the ring wraps here
        o.add(0);
        earlier.clear();
        assertTrue(o.retireThrough(3, earlier::add));
        assertEquals(List.of(2, 1), earlier);
        assertEquals(1, o.size());
    }

    @Test
    void anIndexNotWrittenRetiresNothingAndARefusedOneLeaves() {
        PostedOrder o = new PostedOrder(3);
        o.add(5);
        o.add(6);
        assertFalse(o.retireThrough(7, i -> { throw new AssertionError("retired " + i); }));
        assertEquals(2, o.size());
        assertTrue(o.remove(5));
        assertFalse(o.remove(5));
        List<Integer> earlier = new ArrayList<>();
        assertTrue(o.retireThrough(6, earlier::add));
        assertEquals(List.of(), earlier);
        assertEquals(0, o.size());
    }

    @Test
    void writingMoreThanTheCapacityIsABug() {
        PostedOrder o = new PostedOrder(1);
        o.add(0);
        assertThrows(IllegalStateException.class, () -> o.add(0));
    }

    /** Random writes, completions (of any written one) and refusals agree with a plain queue. */
    @Test
    void agreesWithAQueueUnderRandomUse() {
        RandomCases.run(500, r -> {
            int capacity = 1 + r.nextInt(16);
            PostedOrder o = new PostedOrder(capacity);
            ArrayDeque<Integer> model = new ArrayDeque<>();
            List<Integer> free = new ArrayList<>();
            for (int i = 0; i < capacity; i++) {
                free.add(i);
            }
            for (int step = 0; step < 200; step++) {
                int what = r.nextInt(10);
                if (what < 5 && !free.isEmpty()) {
                    int index = free.remove(r.nextInt(free.size()));
                    o.add(index);
                    model.add(index);
                } else if (what < 9 && !model.isEmpty()) {
                    int target = new ArrayList<>(model).get(r.nextInt(model.size()));
                    List<Integer> expected = new ArrayList<>();
                    while (model.peek() != target) {
                        expected.add(model.poll());
                    }
                    model.poll();
                    List<Integer> earlier = new ArrayList<>();
                    assertTrue(o.retireThrough(target, earlier::add));
                    assertEquals(expected, earlier);
                    free.addAll(expected);
                    free.add(target);
                } else if (!model.isEmpty()) {
                    int target = new ArrayList<>(model).get(r.nextInt(model.size()));
                    model.remove(target);
                    assertTrue(o.remove(target));
                    free.add(target);
                }
                assertEquals(model.size(), o.size());
            }
        });
    }
}
