package rdmaflux.cm.internal.cq;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The entries of a set of shared CQs that connections have reserved: a CQ never has more reserved than
 * its capacity, so it can never overflow (a CQ that overflows fails every queue pair on it). A connection
 * reserves what it can have in flight (its send queue depth plus the receives that can complete for it)
 * in the first CQ with room; when none has, a new CQ is made, of the standard size, or of just the
 * reservation when that is larger (a connection whose queues exceed the standard size gets a CQ of its
 * own). A CQ whose last reservation is returned leaves the set: its owner closes it.
 *
 * <p>Pure bookkeeping, no native calls of its own ({@code make} makes the CQ).
 *
 * <p>Threads: any; the monitor serializes reservations (CM loop) and returns (completion loop).
 *
 * @param <C> the CQ
 */
public final class CqReservations<C> {
    /** A CQ of the set and what is reserved in it. */
    private static final class Held<C> {
        final C cq;
        final int capacity;
        int reserved;

        Held(C cq, int capacity) {
            this.cq = cq;
            this.capacity = capacity;
        }
    }

    private final int standard;
    private final List<Held<C>> cqs = new ArrayList<>();

    /**
     * An empty set.
     *
     * @param standard the entries of a new CQ (at most the device's {@code max_cqe})
     */
    CqReservations(int standard) {
        if (standard <= 0) {
            throw new IllegalArgumentException("CQ size must be > 0, got " + standard);
        }
        this.standard = standard;
    }

    /** {@return the entries of a new CQ} */
    int standard() {
        return standard;
    }

    /**
     * Reserves entries in the first CQ with room, or in a new one.
     *
     * @param entries what the connection can have in flight, &gt; 0
     * @param make makes a CQ of the given number of entries; what it throws is thrown, nothing reserved
     * @return the CQ the entries are reserved in
     */
    synchronized C reserve(int entries, IntFunction<C> make) {
        if (entries <= 0) {
            throw new IllegalArgumentException("entries must be > 0, got " + entries);
        }
        for (Held<C> h : cqs) {
            if (h.capacity - h.reserved >= entries) {
                h.reserved += entries;
                return h.cq;
            }
        }
        int capacity = Math.max(standard, entries);
        Held<C> h = new Held<>(make.apply(capacity), capacity);
        h.reserved = entries;
        cqs.add(h);
        return h.cq;
    }

    /**
     * Returns a reservation.
     *
     * @param cq the CQ {@link #reserve} returned
     * @param entries what was reserved there
     * @return whether that was its last reservation: the CQ left the set and may be closed
     * @throws IllegalStateException when {@code cq} is not in the set or holds less than {@code entries}
     */
    synchronized boolean release(C cq, int entries) {
        for (int i = 0; i < cqs.size(); i++) {
            Held<C> h = cqs.get(i);
            if (h.cq == cq) {
                if (entries <= 0 || entries > h.reserved) {
                    throw new IllegalStateException("returning " + entries + " entries of " + h.reserved + " reserved");
                }
                h.reserved -= entries;
                if (h.reserved == 0) {
                    cqs.remove(i);
                    return true;
                }
                return false;
            }
        }
        throw new IllegalStateException(cq + " is not in the set");
    }

    /** {@return how many CQs the set has} */
    synchronized int size() {
        return cqs.size();
    }

    /**
     * What is reserved in one CQ.
     *
     * @param cq a CQ of the set
     * @return its reserved entries, 0 when it is not in the set
     */
    synchronized int reserved(C cq) {
        for (Held<C> h : cqs) {
            if (h.cq == cq) {
                return h.reserved;
            }
        }
        return 0;
    }

    /**
     * Its capacity.
     *
     * @param cq a CQ of the set
     * @return its entries, 0 when it is not in the set
     */
    synchronized int capacity(C cq) {
        for (Held<C> h : cqs) {
            if (h.cq == cq) {
                return h.capacity;
            }
        }
        return 0;
    }
}
