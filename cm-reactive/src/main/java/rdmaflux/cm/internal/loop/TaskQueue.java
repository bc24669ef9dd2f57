package rdmaflux.cm.internal.loop;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An unbounded multi-producer, single-consumer queue whose nodes are the tasks themselves (Dmitry
 * Vyukov's intrusive MPSC queue), so that offering a task allocates nothing: a task that is offered
 * again and again, as a subscriber's drain is, costs no memory per offer. A task may be offered again
 * once {@link #poll()} has returned it, never while it is queued.
 *
 * <p>Threads: any thread offers; one thread, the consumer, polls and asks {@link #isEmpty()}.
 */
public final class TaskQueue {

    /** A task that can be queued: its link lives in it. */
    abstract static class Task implements Runnable {
        private static final VarHandle NEXT;

        static {
            try {
                NEXT = MethodHandles.lookup().findVarHandle(Task.class, "next", Task.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** The task queued after this one; written by the producer that queued that one. */
        @SuppressWarnings("unused") // through NEXT
        private volatile Task next;
    }

    /** Stands in the queue when it would otherwise be empty, so producers never touch the consumer's end. */
    private static final class Stub extends Task {
        @Override
        public void run() {
            throw new AssertionError("the stub is never run");
        }
    }

    private final Task stub = new Stub();
    /** The producers' end: the task offered last. */
    private final AtomicReference<Task> head = new AtomicReference<>(stub);
    /** The consumer's end: the next task to poll, or the stub; consumer only. */
    private Task tail = stub;

    /**
     * Queues a task; any thread.
     *
     * @param t a task not queued now
     */
    void offer(Task t) {
        Task.NEXT.setRelease(t, (Task) null);
        Task prev = head.getAndSet(t);
        // Until this store the consumer sees a queue that is not empty yet has nothing to poll.
        Task.NEXT.setRelease(prev, t);
    }

    /** {@return the oldest task, or {@code null} when there is none or a producer is still linking one}; consumer only */
    Task poll() {
        Task t = tail;
        Task next = (Task) Task.NEXT.getAcquire(t);
        if (t == stub) {
            if (next == null) {
                return null;
            }
            tail = next;
            t = next;
            next = (Task) Task.NEXT.getAcquire(next);
        }
        if (next != null) {
            tail = next;
            return t;
        }
        if (t != head.get()) {
            return null;
        }
        offer(stub);
        next = (Task) Task.NEXT.getAcquire(t);
        if (next != null) {
            tail = next;
            return t;
        }
        return null;
    }

    /**
     * {@return whether nothing is queued, or being linked}; consumer only. After {@link #poll()} returned
     * {@code null}, {@code false} means a producer is between its two steps and the consumer should poll
     * again rather than sleep.
     */
    boolean isEmpty() {
        return tail == stub && head.get() == stub;
    }
}
