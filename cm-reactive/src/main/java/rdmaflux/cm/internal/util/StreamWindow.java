package rdmaflux.cm.internal.util;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.reactivestreams.Subscription;
import reactor.core.scheduler.Scheduler;

/**
 * The window of a stream whose elements are sent one by one, shared by an RC connection's
 * {@code send(Publisher)} and a UD queue's: at most {@link #size()} elements are outstanding (taken from the
 * source and not finished); each finished element's place may be requested again, and the request goes to the
 * source on the scheduler, never on the thread that finished the element (a completion loop), once half the
 * window is due or nothing is outstanding. So the scheduler is called about once per half window, not once per
 * element, and the source never runs on a completion loop. The window also knows whether the source completed
 * and whether the stream ended (once: the first failure, completion or cancel).
 *
 * <p>The owner decides what an element is, where it waits and how the stream's end is signalled; it tells the
 * window what happened ({@link #take()}, {@link #finish()}, {@link #finished(int, int)}) and asks the source
 * for the credit in its request task ({@link #requestFrom}, or {@link #takeCredit()} for a source it polls).
 *
 * <p>Threads: any; all state is atomic, so the source's thread, a completion loop and the scheduler may call
 * it at once, and no lock of the owner's need be held. The request task and whatever the owner
 * {@link #schedule}s run on the scheduler (on the calling thread once the scheduler is disposed).
 */
public final class StreamWindow {
    private final int size;
    /** Finished elements after which more is requested: half the window. */
    private final int batch;
    private final Scheduler scheduler;
    /** The owner's request task: asks the source for the credit (and may do the owner's own work first). */
    private final Runnable request;
    private final AtomicInteger outstanding = new AtomicInteger();
    /** Finished elements not yet turned into a request to the source. */
    private final AtomicInteger credit = new AtomicInteger();
    private final AtomicBoolean requestScheduled = new AtomicBoolean();
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile boolean sourceDone;

    /**
     * @param size how many elements may be outstanding (at least 1)
     * @param scheduler where the request task and the owner's signals run
     * @param request the request task; it calls {@link #requestStarted()} first
     */
    public StreamWindow(int size, Scheduler scheduler, Runnable request) {
        if (size < 1) {
            throw new IllegalArgumentException("window " + size);
        }
        this.size = size;
        this.batch = batch(size);
        this.scheduler = scheduler;
        this.request = request;
    }

    /**
     * {@return after how many finished elements more is requested: half the window, at least one}
     *
     * @param size the window
     */
    public static int batch(int size) {
        return Math.max(1, size / 2);
    }

    /**
     * Whether finishing an element schedules the request task.
     *
     * @param due finished elements not requested yet (0: none is to be requested, the stream is ending)
     * @param batch {@link #batch(int)} of the window
     * @param left elements still outstanding
     * @param ended whether the stream ended (its owner's task may have releases to hand back)
     * @return whether the request task is due
     */
    public static boolean requestDue(int due, int batch, int left, boolean ended) {
        return due >= batch || left == 0 || ended;
    }

    /** {@return how many elements may be outstanding} */
    public int size() {
        return size;
    }

    /** The source's thread: one more element is outstanding. */
    public void take() {
        outstanding.incrementAndGet();
    }

    /**
     * The source's thread: {@code n} taken elements never went out (they failed before), so they never finish.
     *
     * @param n how many
     */
    public void untake(int n) {
        outstanding.addAndGet(-n);
    }

    /** {@return elements outstanding} */
    public int outstanding() {
        return outstanding.get();
    }

    /**
     * An element finished (sent, failed or withdrawn).
     *
     * @return elements still outstanding
     */
    public int finish() {
        return outstanding.decrementAndGet();
    }

    /**
     * After {@link #finish()}, when the stream goes on: the element's place may be requested again.
     *
     * @return finished elements not requested yet, this one included
     */
    public int replace() {
        return credit.incrementAndGet();
    }

    /**
     * After {@link #finish()} (and {@link #replace()}, if the stream goes on): schedules the request task when
     * {@link #requestDue} says so and it is not scheduled already.
     *
     * @param due what {@link #replace()} returned, or 0 when the element was not replaced
     * @param left what {@link #finish()} returned
     */
    public void finished(int due, int left) {
        if (requestDue(due, batch, left, ended.get()) && requestScheduled.compareAndSet(false, true)) {
            schedule(request);
        }
    }

    /**
     * Credit given without a finished element: a polled source's first window, taken by its first drain.
     *
     * @param n how many
     */
    public void grant(int n) {
        credit.addAndGet(n);
    }

    /** {@return the credit, which is now the caller's to use: elements the source may be asked for} */
    public int takeCredit() {
        return credit.getAndSet(0);
    }

    /** The scheduler, first thing in the request task: a finish after this schedules it again. */
    public void requestStarted() {
        requestScheduled.set(false);
    }

    /**
     * The scheduler, in the request task: asks a source that pushes for the credit, unless the stream ended.
     *
     * @param upstream the source's subscription
     */
    public void requestFrom(Subscription upstream) {
        int n = takeCredit();
        if (n > 0 && !ended.get()) {
            upstream.request(n);
        }
    }

    /** The source completed (or a polled one ran dry for good): no more elements will be taken. */
    public void sourceDone() {
        sourceDone = true;
    }

    /** {@return whether the source completed} */
    public boolean isSourceDone() {
        return sourceDone;
    }

    /** {@return whether the stream ended} */
    public boolean ended() {
        return ended.get();
    }

    /**
     * Ends the stream, once.
     *
     * @return whether this call ended it (the caller signals the end)
     */
    public boolean end() {
        return ended.compareAndSet(false, true);
    }

    /**
     * Runs {@code task} on the scheduler; on the calling thread once the scheduler is disposed, so a signal is
     * late rather than never.
     *
     * @param task the task
     */
    public void schedule(Runnable task) {
        try {
            scheduler.schedule(task);
        } catch (RejectedExecutionException e) {
            task.run();
        }
    }
}
