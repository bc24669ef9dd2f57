package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.Map;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaLoops;

/**
 * The threads of one side of an in-process pair: its own {@link RdmaLoops} (one completion loop) and its own
 * single-thread scheduler, all named with one prefix. With the client and the server on different threads,
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
        this.prefix = prefix;
        this.loops = RdmaLoops.create(prefix, 1);
        this.scheduler = Schedulers.newSingle(prefix + "-sched", true);
    }

    /** {@return {@code base} on this side's loops and scheduler} */
    ConnectionOptions options(ConnectionOptions base) {
        return base.toBuilder().loops(loops).scheduler(scheduler).build();
    }

    /** Counts {@code t} (the thread driving a benchmark loop) as one of this side's threads too. */
    void include(Thread t) {
        caller = t;
    }

    /** {@return heap bytes allocated so far by each thread of this side, by thread id} */
    Map<Long, Long> allocated() {
        Map<Long, Long> bytes = new HashMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith(prefix) || t == caller) {
                bytes.put(t.threadId(), THREADS.getThreadAllocatedBytes(t.threadId()));
            }
        }
        return bytes;
    }

    /** {@return heap bytes this side's threads allocated since {@code before} (a thread started since: all)} */
    long since(Map<Long, Long> before) {
        long sum = 0;
        for (Map.Entry<Long, Long> e : allocated().entrySet()) {
            sum += Math.max(0, e.getValue() - before.getOrDefault(e.getKey(), 0L));
        }
        return sum;
    }

    @Override
    public void close() {
        scheduler.dispose();
        loops.dispose();
    }
}
