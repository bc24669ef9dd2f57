package rdmaflux.cm.internal.rc;

import java.util.function.IntConsumer;

/**
 * The operations of one send queue that were written and not finished, by index, in the order they were
 * written: the order they reach the send queue ({@link SendBatches}) and, on an RC queue pair, complete in.
 * An unsignaled request has no completion of its own when it succeeds: the completion of a later one
 * retires it ({@link #retireThrough}). Pure: it knows indexes, not operations.
 *
 * <p>Threads: guarded by the connection's {@link ConnectionLock}, as its {@link SendQueue}.
 */
public final class PostedOrder {
    private final int[] ring;
    private int head;
    private int count;

    /** @param capacity the most operations written and not finished (the send queue's depth) */
    PostedOrder(int capacity) {
        ring = new int[capacity];
    }

    /** {@return how many are written and not finished} */
    int size() {
        return count;
    }

    /**
     * Operation {@code index} was written after all the others.
     *
     * @throws IllegalStateException when more are written than the capacity: a caller's bug
     */
    void add(int index) {
        if (count == ring.length) {
            throw new IllegalStateException("more than " + ring.length + " operations written");
        }
        ring[at(count)] = index;
        count++;
    }

    /**
     * A completion of operation {@code index} came: it and every operation written before it leave the order,
     * and each of those before it is handed to {@code earlier}, oldest first (they succeeded: a failed or
     * flushed request has a completion of its own, which comes first). An index not in the order retires
     * nothing.
     *
     * @return whether {@code index} was in the order
     */
    boolean retireThrough(int index, IntConsumer earlier) {
        int before = 0;
        while (before < count && ring[at(before)] != index) {
            before++;
        }
        if (before == count) {
            return false;
        }
        for (int i = 0; i < before; i++) {
            int k = ring[head];
            head = at(1);
            count--;
            earlier.accept(k);
        }
        head = at(1); // index itself
        count--;
        return true;
    }

    /**
     * Operation {@code index} leaves the order without a completion (the device refused its post).
     *
     * @return whether it was in the order
     */
    boolean remove(int index) {
        for (int i = 0; i < count; i++) {
            if (ring[at(i)] == index) {
                for (int j = i; j < count - 1; j++) {
                    ring[at(j)] = ring[at(j + 1)];
                }
                count--;
                return true;
            }
        }
        return false;
    }

    /** {@return the position in {@link #ring} of the {@code i}-th operation in order} */
    private int at(int i) {
        int k = head + i;
        return k >= ring.length ? k - ring.length : k;
    }
}
