package rdmaflux.cm.internal.loop;

import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The worker threads of a set of loops ({@code prefix-worker-N}): where work that may take milliseconds and so
 * never runs on a loop runs (a large message's copy, allocation and registration). Threads start on demand, up
 * to ten per CPU, and end after a minute idle; a task goes to an idle thread when there is one, so a burst
 * does not leave a trail of new threads (a plain {@link ThreadPoolExecutor} starts a thread per task until it
 * holds its core size, idle ones beside it), and waits in a queue once every thread is busy. The loops own them, rather than borrowing Reactor's {@code boundedElastic()}: that one
 * is shared, and whoever calls {@code Schedulers.shutdownNow()} (rsocket-test's kit does, per transport pair)
 * would take it from under the connections.
 *
 * <p>Threads: any thread schedules; the loops shut it down as they end and wait for its threads.
 */
final class Workers {
    private static final int THREADS = 10 * Runtime.getRuntime().availableProcessors();

    private static final Runnable NOTHING = () -> { };

    private final ThreadPoolExecutor executor;
    private final Scheduler scheduler;

    /** @param prefix the threads are {@code prefix-worker-N} */
    Workers(String prefix) {
        this(prefix, THREADS);
    }

    /**
     * @param prefix the threads are {@code prefix-worker-N}
     * @param threads the most that run at once
     */
    Workers(String prefix, int threads) {
        AtomicInteger n = new AtomicInteger();
        HandOff queue = new HandOff();
        executor = new ThreadPoolExecutor(0, threads, 60, TimeUnit.SECONDS, queue, r -> {
            Thread t = new Thread(r, prefix + "-worker-" + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        }, (r, pool) -> {
            // Every thread is busy: the task waits for the first to finish.
            if (pool.isShutdown()) {
                throw new RejectedExecutionException("the loops' workers are shut down: the loops were disposed");
            }
            queue.enqueue(r);
            if (pool.getPoolSize() == 0) {
                // The last thread timed out between the refusal and the enqueue: a new one takes the queue.
                pool.execute(NOTHING);
            }
        });
        // Made directly, not through Schedulers' factory, which a test's virtual time may have replaced.
        scheduler = Schedulers.fromExecutorService(executor, prefix + "-worker");
    }

    /** {@return the threads running now, busy or idle; any thread} */
    int threads() {
        return executor.getPoolSize();
    }

    /** {@return the threads waiting for a task now; any thread} */
    int idle() {
        return ((HandOff) executor.getQueue()).getWaitingConsumerCount();
    }

    /** {@return the tasks waiting for a thread now; any thread} */
    int queued() {
        return executor.getQueue().size();
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

    /**
     * The executor's queue: it takes a task only when an idle thread takes it at once, so the executor starts a
     * thread for it otherwise (up to its maximum), and its rejection handler queues it past that.
     */
    private static final class HandOff extends LinkedTransferQueue<Runnable> {
        @Override
        public boolean offer(Runnable r) {
            return tryTransfer(r);
        }

        void enqueue(Runnable r) {
            super.offer(r);
        }
    }
}
