package rdmaflux.cm.internal.loop;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The worker threads of a set of loops ({@code prefix-worker-N}): where work that may take milliseconds and so
 * never runs on a loop runs (a large message's copy, allocation and registration). Threads start on demand and
 * end after a minute idle. The loops own them, rather than borrowing Reactor's {@code boundedElastic()}: that one
 * is shared, and whoever calls {@code Schedulers.shutdownNow()} (rsocket-test's kit does, per transport pair)
 * would take it from under the connections.
 *
 * <p>Threads: any thread schedules; the loops shut it down as they end and wait for its threads.
 */
final class Workers {
    private static final int THREADS = 10 * Runtime.getRuntime().availableProcessors();

    private final ThreadPoolExecutor executor;
    private final Scheduler scheduler;

    /** @param prefix the threads are {@code prefix-worker-N} */
    Workers(String prefix) {
        AtomicInteger n = new AtomicInteger();
        executor = new ThreadPoolExecutor(THREADS, THREADS, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, prefix + "-worker-" + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        });
        executor.allowCoreThreadTimeOut(true);
        // Made directly, not through Schedulers' factory, which a test's virtual time may have replaced.
        scheduler = Schedulers.fromExecutorService(executor, prefix + "-worker");
    }

    /** {@return the scheduler over the threads} */
    Scheduler scheduler() {
        return scheduler;
    }

    /** Runs what is queued, refuses the rest; any thread. */
    void shutdown() {
        executor.shutdown();
    }

    /** Waits until every thread has ended after {@link #shutdown()}; never on a loop thread. */
    void await() {
        try {
            while (!executor.awaitTermination(1, TimeUnit.MINUTES)) {
                // A copy or registration still running: the loops' end waits for it, as for any thread.
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the workers to end", e);
        }
    }
}
