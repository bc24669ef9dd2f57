package rdmaflux.verbs;

/**
 * A map from QP number to a value, for a CQ polled for many queue pairs: the poll finds what each
 * completion belongs to by its {@code qp_num} ({@link WorkCompletions#qpNumber(int)}). A {@link
 * CompletionQueue} keeps one of its queue pairs, to find the work request behind each completion; a
 * library sharing a CQ between connections can keep one of its connections. Lookups read one
 * open-addressing table of primitive keys that is never written once published, so they take no lock and
 * allocate nothing (no boxed keys); adding or removing (rare: once per queue pair) builds a new table.
 *
 * <p>Threads: {@link #get} from any thread; {@link #add} and {@link #remove} from any thread, serialized
 * by the monitor.
 *
 * @param <T> the value
 */
public final class QpNumbers<T> {
    private static final class Table {
        final int[] numbers;
        final Object[] values;
        final int size;

        Table(int capacity, int size) {
            this.numbers = new int[capacity];
            this.values = new Object[capacity];
            this.size = size;
        }
    }

    private volatile Table table = new Table(4, 0);

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
        int m = t.values.length - 1;
        for (int i = mix(number) & m;; i = (i + 1) & m) {
            Object v = t.values[i];
            if (v == null || t.numbers[i] == number) {
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
        Table t = table;
        if (get(number) != null) {
            return false;
        }
        int capacity = t.values.length;
        while ((t.size + 1) * 2 > capacity) {
            capacity *= 2;
        }
        Table n = new Table(capacity, t.size + 1);
        copy(t, n, 0, null);
        insert(n, number, value);
        table = n;
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
        Table t = table;
        if (get(number) != value || value == null) {
            return false;
        }
        int capacity = t.values.length;
        while (capacity > 4 && (t.size - 1) * 8 < capacity) {
            capacity /= 2; // shrinks as connections leave, never below a quarter full after the removal
        }
        Table n = new Table(capacity, t.size - 1);
        copy(t, n, number, value);
        table = n;
        return true;
    }

    /** {@return how many QP numbers are in the table} */
    public int size() {
        return table.size;
    }

    private static void copy(Table from, Table to, int skipNumber, Object skip) {
        for (int i = 0; i < from.values.length; i++) {
            Object v = from.values[i];
            if (v != null && !(v == skip && from.numbers[i] == skipNumber)) {
                insert(to, from.numbers[i], v);
            }
        }
    }

    private static void insert(Table t, int number, Object value) {
        int m = t.values.length - 1;
        int i = mix(number) & m;
        while (t.values[i] != null) {
            i = (i + 1) & m;
        }
        t.numbers[i] = number;
        t.values[i] = value;
    }

    private static int mix(int number) {
        // QP numbers are often consecutive: spread them over the table.
        int h = number * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
