package rdmaflux.cm.internal.loop;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * One thread of a {@link SignalScheduler}: runs the tasks queued to it, in order, and sleeps when there
 * are none. Queuing a task and waking the thread allocate nothing ({@link TaskQueue}, {@link LockSupport}),
 * so a connection's signals cost no memory to hand over. A {@link LoopThread}, so a Reactor
 * {@code NonBlocking} thread, as Reactor's parallel workers are: {@code block()} on it throws.
 *
 * <p>Threads: any thread {@linkplain #execute executes} and {@linkplain #shutdown shuts down}; the queue's
 * consumer side and the tasks belong to this thread.
 */
public final class SignalThread extends LoopThread {
    private final TaskQueue queue = new TaskQueue();
    /** Whether this thread is about to sleep or sleeping: a producer then wakes it. */
    private volatile boolean sleeping;
    /** Set once: run what is queued, then end. */
    private volatile boolean stopping;
    /** Producers between their check of {@link #stopping} and the end of their offer: the thread waits for them. */
    private final AtomicInteger offering = new AtomicInteger();

    /**
     * A daemon thread, not started.
     *
     * @param name the thread's name
     */
    SignalThread(String name) {
        super(name, null);
    }

    /**
     * Queues a task to run on this thread.
     *
     * @param task a task not queued now
     * @throws RejectedExecutionException when the thread is shut down
     */
    void execute(TaskQueue.Task task) {
        offering.getAndIncrement();
        try {
            if (stopping) {
                throw new RejectedExecutionException(getName() + " is shut down");
            }
            queue.offer(task);
        } finally {
            offering.getAndDecrement();
        }
        // Read after the offer, and the sleeper reads the queue after setting it: one of the two sees the other.
        if (sleeping) {
            LockSupport.unpark(this);
        }
    }

    /** Ends the thread once the tasks queued by now have run; any thread. */
    void shutdown() {
        stopping = true;
        LockSupport.unpark(this);
    }

    /** {@return whether the thread is shut down (it may still be running what was queued)} */
    boolean isShutdown() {
        return stopping;
    }

    @Override
    public void run() {
        int waits = 0;
        for (;;) {
            TaskQueue.Task t = queue.poll();
            if (t != null) {
                waits = 0;
                runTask(t);
            } else if (!queue.isEmpty()) {
                waits = waitForProducer(waits); // a producer is linking its task
            } else if (stopping) {
                // A producer that counts itself after this read sees stopping and is refused; one counted
                // before has its task queued, or queues it while this thread waits.
                if (offering.get() == 0 && queue.isEmpty()) {
                    return;
                }
                waits = waitForProducer(waits);
            } else {
                idle();
                waits = 0;
            }
        }
    }

    /**
     * Sleeps until a producer or {@link #shutdown()} wakes it (or spuriously). The thread's own wait between
     * tasks, in a method of its own: BlockHound's integration allows the park here, and only here.
     */
    private void idle() {
        sleeping = true;
        if (queue.isEmpty() && !stopping) {
            LockSupport.park(this);
        }
        sleeping = false;
    }

    /**
     * Waits a moment for a producer between two steps; spins first, then yields, since a producer preempted
     * there may need this thread's CPU to go on. BlockHound's integration allows both here.
     *
     * @return the waits so far
     */
    private static int waitForProducer(int waits) {
        if (waits < 64) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
        return waits + 1;
    }

    private void runTask(TaskQueue.Task t) {
        try {
            t.run();
        } catch (Throwable e) {
            // As Reactor's schedulers: a task's failure is reported and the thread goes on.
            getUncaughtExceptionHandler().uncaughtException(this, e);
        }
    }
}
