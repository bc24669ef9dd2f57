package rdmaflux.verbs;

/**
 * The queue pairs whose completions go to one CQ, by QP number: how a poll finds the QP, and so the
 * {@link WorkRing}, of each completion. Lookups read one open-addressing table that is never written once
 * published and allocate nothing; adding or removing a QP (rare) builds a new table.
 */
final class QpTable {
    private static final class Table {
        final int[] numbers;
        final QueuePair[] qps;
        int size;

        Table(int capacity) {
            this.numbers = new int[capacity];
            this.qps = new QueuePair[capacity];
        }
    }

    private volatile Table table = new Table(2);

    /** {@return the QP with this number, or null} */
    QueuePair get(int number) {
        Table t = table;
        int m = t.qps.length - 1;
        for (int i = mix(number) & m;; i = (i + 1) & m) {
            QueuePair q = t.qps[i];
            if (q == null || t.numbers[i] == number) {
                return q;
            }
        }
    }

    synchronized void add(QueuePair qp) {
        Table t = table;
        int capacity = t.qps.length;
        while ((t.size + 1) * 2 > capacity) {
            capacity *= 2;
        }
        Table n = new Table(capacity);
        copy(t, n, null);
        insert(n, qp.number(), qp);
        table = n;
    }

    synchronized void remove(QueuePair qp) {
        Table t = table;
        Table n = new Table(t.qps.length);
        copy(t, n, qp);
        table = n;
    }

    /** {@return how many QPs are in the table} */
    int size() {
        return table.size;
    }

    private static void copy(Table from, Table to, QueuePair skip) {
        for (int i = 0; i < from.qps.length; i++) {
            QueuePair q = from.qps[i];
            if (q != null && q != skip) {
                insert(to, from.numbers[i], q);
            }
        }
    }

    private static void insert(Table t, int number, QueuePair qp) {
        int m = t.qps.length - 1;
        int i = mix(number) & m;
        while (t.qps[i] != null) {
            i = (i + 1) & m;
        }
        t.numbers[i] = number;
        t.qps[i] = qp;
        t.size++;
    }

    private static int mix(int number) {
        // QP numbers are often consecutive: spread them over the table.
        return (number * 0x9E3779B9) >>> 16 ^ number;
    }
}
