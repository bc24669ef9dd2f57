package rdmaflux.verbs;

/**
 * A map from QP number to a value, for a CQ polled for many queue pairs: the poll finds what each
 * completion belongs to by its {@code qp_num} ({@link WorkCompletions#qpNumber(int)}). A {@link
 * CompletionQueue} keeps one of its queue pairs, to find the work request behind each completion; a
 * library sharing a CQ between connections can keep one of its connections. Lookups read one
 * open-addressing table of primitive keys without a lock and allocate nothing (no boxed keys).
 *
 * <p>Adding and removing cost O(1), amortized, however many queue pairs share the CQ: an entry is written
 * into the published table in place (its number first, then its value, with release semantics), and a
 * removed entry leaves a tombstone. A slot is never used twice, so a lookup that read a value (with acquire
 * semantics) reads the number written with it. The table is rebuilt, and published anew, only when live
 * entries and tombstones fill half of it (grown, or shrunk when a quarter or less of the new table
 * would be live); each rebuild is paid for by the additions and removals since the last one.
 *
 * <p>Threads: {@link #get} from any thread; {@link #add} and {@link #remove} from any thread, serialized
 * by the monitor.
 *
 * @param <T> the value
 */
public final class QpNumbers<T> {
    /** The value of a removed entry: lookups probe past it, and its slot is not used again. */
    private static final Object TOMBSTONE = new Object();
    private static final java.lang.invoke.VarHandle VALUES =
            java.lang.invoke.MethodHandles.arrayElementVarHandle(Object[].class);

    private static final class Table {
        final int[] numbers;
        final Object[] values;

        Table(int capacity) {
            this.numbers = new int[capacity];
            this.values = new Object[capacity];
        }
    }

    private volatile Table table = new Table(4);
    /** Live entries; written under the monitor, read by {@link #size()} from any thread. */
    private volatile int size;
    /** Slots no longer empty: live entries and tombstones; under the monitor. */
    private int used;
    /** Tables built since this map was made, for the tests of the amortized cost; under the monitor. */
    private int rebuilds;

    /** An empty map. */
    public QpNumbers() {
    }

    /**
     * The value of a QP number.
     *
     * @param number a QP number
     * @return its value, or {@code null}
     */
    @SuppressWarnings("unchecked")
    public T get(int number) {
        Table t = table;
        Object[] values = t.values;
        int m = values.length - 1;
        for (int i = mix(number) & m;; i = (i + 1) & m) {
            Object v = VALUES.getAcquire(values, i);
            if (v == null) {
                return null;
            }
            if (v != TOMBSTONE && t.numbers[i] == number) {
                return (T) v;
            }
        }
    }

    /**
     * Adds a QP number, unless it is there already.
     *
     * @param number the QP number
     * @param value its value, not null
     * @return whether it was added ({@code false}: the number has another value, which stays)
     */
    public synchronized boolean add(int number, T value) {
        java.util.Objects.requireNonNull(value);
        if (get(number) != null) {
            return false;
        }
        if ((used + 1) * 2 > table.values.length) {
            rebuild(size + 1);
        }
        insert(table, number, value);
        used++;
        size = size + 1;
        return true;
    }

    /**
     * Removes a QP number if it has this value.
     *
     * @param number the QP number
     * @param value the value it must have (another one, added since, stays)
     * @return whether it was removed
     */
    public synchronized boolean remove(int number, T value) {
        if (value == null) {
            return false;
        }
        Table t = table;
        Object[] values = t.values;
        int m = values.length - 1;
        for (int i = mix(number) & m;; i = (i + 1) & m) {
            Object v = values[i];
            if (v == null) {
                return false;
            }
            if (v != TOMBSTONE && t.numbers[i] == number) {
                if (v != value) {
                    return false;
                }
                VALUES.setRelease(values, i, TOMBSTONE);
                size = size - 1;
                if (values.length > 4 && size * 8 < values.length) {
                    rebuild(size); // shrinks as connections leave
                }
                return true;
            }
        }
    }

    /** {@return how many QP numbers are in the table} */
    public int size() {
        return size;
    }

    /**
     * Publishes a table without tombstones, at most half full once {@code live} entries are in: the live
     * entries are copied before it is published, so a lookup finds each of them in the old table or the new.
     */
    private void rebuild(int live) {
        int capacity = 4;
        while (live * 4 > capacity) {
            capacity *= 2; // a quarter full after the rebuild: as many changes as live entries before the next
        }
        Table from = table;
        Table to = new Table(capacity);
        for (int i = 0; i < from.values.length; i++) {
            Object v = from.values[i];
            if (v != null && v != TOMBSTONE) {
                insert(to, from.numbers[i], v);
            }
        }
        used = size;
        rebuilds++;
        table = to;
    }

    /** {@return how many times the table was rebuilt} */
    synchronized int rebuilds() {
        return rebuilds;
    }

    private static void insert(Table t, int number, Object value) {
        Object[] values = t.values;
        int m = values.length - 1;
        int i = mix(number) & m;
        while (values[i] != null) {
            i = (i + 1) & m;
        }
        t.numbers[i] = number;
        VALUES.setRelease(values, i, value);
    }

    private static int mix(int number) {
        // QP numbers are often consecutive: spread them over the table.
        int h = number * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
