package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;

/**
 * The threads of one side of an in-process pair: its own {@link RdmaLoops} (one completion loop, and its
 * signal thread, the default scheduler), all named with one prefix. With the client and the server on different threads,
 * the heap each side allocates is the sum over its threads ({@code ThreadMXBean#getThreadAllocatedBytes}),
 * which is what tells the cost of {@code receive()} from the cost of {@code send}.
 */
final class Sides implements AutoCloseable {
    /** The JVM's thread bean, with allocation counting. */
    static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final String prefix;
    private final RdmaLoops loops;
    private final Scheduler scheduler;
    private Thread caller;

    /**
     * Starts the side's loops and scheduler.
     *
     * @param prefix the name prefix of all its threads
     */
    Sides(String prefix) {
        this(prefix, false);
    }

    /**
     * Starts the side's loops.
     *
     * @param prefix the name prefix of all its threads
     * @param onLoop signals on the loops' threads ({@code Schedulers.immediate()}) instead of their signal thread
     */
    Sides(String prefix, boolean onLoop) {
        this.prefix = prefix;
        this.loops = RdmaLoops.create(prefix, 1);
        this.scheduler = onLoop ? Schedulers.immediate() : loops.scheduler();
    }

    /** {@return {@code base} on this side's loops and scheduler (immediate, or the loops' signal thread)} */
    ConnectionOptions options(ConnectionOptions base) {
        return base.toBuilder().loops(loops).scheduler(scheduler).build();
    }

    /** Counts {@code t} (the thread driving a benchmark loop) as one of this side's threads too. */
    void include(Thread t) {
        caller = t;
    }

    /**
     * {@return a counter over this side's threads as they are now} Finding the threads allocates; take every
     * side's counter before {@link Counter#mark() marking} any, so that allocation is nobody's.
     */
    Counter counter() {
        List<Thread> mine = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith(prefix) || t == caller) {
                mine.add(t);
            }
        }
        long[] ids = mine.stream().mapToLong(Thread::threadId).toArray();
        return new Counter(ids, new long[ids.length]);
    }

    /**
     * Heap bytes allocated by a fixed set of threads since {@link #mark()}. Reads one thread at a time into
     * arrays made beforehand, so neither call allocates on the measuring thread, which may be one of the
     * counted ones. All of a side's threads exist before the timed part (the warm-up started them).
     */
    record Counter(long[] ids, long[] base) {
        /** Takes the threads' counts now as the base. */
        void mark() {
            for (int i = 0; i < ids.length; i++) {
                base[i] = THREADS.getThreadAllocatedBytes(ids[i]);
            }
        }

        /** {@return the bytes the threads allocated since {@link #mark()} (a thread that ended: not counted)} */
        long since() {
            long sum = 0;
            for (int i = 0; i < ids.length; i++) {
                long now = THREADS.getThreadAllocatedBytes(ids[i]);
                if (now >= 0) {
                    sum += now - base[i];
                }
            }
            return sum;
        }
    }

    @Override
    public void close() {
        loops.dispose();
    }
}
