package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.internal.rc.ConnectionLock;
import rdmaflux.cm.internal.rc.RcQueue;
import rdmaflux.cm.internal.datagram.UdQueue;

import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.WorkCompletions;

/**
 * Polls one CQ for its owner: batches of work completions handed to a {@link Sink}, the re-arm that
 * cannot lose a completion, busy polling, and the final drain before the owner leaves its loop. The RC
 * ({@link RcQueue}) and UD ({@link UdQueue}) data paths share it.
 *
 * <p>Thread: the completion loop the owner is registered with, or (RC) whichever thread holds the owner's
 * {@link ConnectionLock} when the loop found it held; never two at once.
 */
public final class CqDrain implements CompletionSource {

    /** What the owner does with completions. */
    public interface Sink {
        /**
         * One work completion; called on the completion loop.
         *
         * @param wc the batch
         * @param i its index in the batch
         */
        void complete(WorkCompletions wc, int i);

        /**
         * A batch was polled (metrics); called before its completions.
         *
         * @param n how many completions it held
         */
        default void polled(int n) {
        }

        /** The completions of the batch {@link #polled} announced were handed over (also when one threw). */
        default void handled() {
        }
    }

    private final CompletionQueue cq;
    private final Sink sink;
    private final WorkCompletions wc = new WorkCompletions(32);
    private final long busyPollNanos;
    /**
     * Busy polling: the empty polls in a row between two reads of the clock. A busy period so ends at most
     * this many polls (microseconds) after {@code busyPollNanos} have passed since the last completion.
     */
    static final int CLOCK_POLLS = 32;
    /**
     * Where the busy period starts: the first clock read after a drain found completions ({@link #quiet()}),
     * or when a thread that drains for the loop was about to look for them ({@link #touch()}). Written by
     * whichever thread drains: volatile.
     */
    private volatile long lastActivity;
    /**
     * Busy polling: whether the last drain left the CQ armed, with nothing polled since, so that the loop may
     * stop polling it and wait for its notification. The loop reads it after its own drain; a holder of the
     * owner's lock may have drained since: the state of the last drain decides, not a second clock read
     * (a busy period that ran out between the drain that skipped the re-arm and the loop's check would
     * leave the CQ neither polled nor armed). Volatile for that reason.
     */
    private volatile boolean armed;
    private boolean draining;
    /**
     * Busy polling, the drainer's: empty polls in a row since the clock was last read. The clock is read
     * once every {@link #CLOCK_POLLS} of them, not on every poll: on an emulated CPU a clock read costs as
     * much as a poll that finds nothing.
     */
    private int idlePolls;
    /** Busy polling, the drainer's: whether a poll found completions since the clock was last read. */
    private boolean activeSinceClock;

    /**
     * The CQ (armed by {@link #start()}).
     *
     * @param cq the CQ (armed by {@link #start()})
     * @param sink the owner
     * @param busyPollNanos how long to keep polling without re-arming after the last completion; 0 for
     *                      event-driven
     */
    public CqDrain(CompletionQueue cq, Sink sink, long busyPollNanos) {
        this.cq = cq;
        this.sink = sink;
        this.busyPollNanos = busyPollNanos;
        this.lastActivity = System.nanoTime() - busyPollNanos; // quiet until the first completion
    }

    /** Arms the CQ and takes what arrived before: the first call on the loop. */
    @Override
    public void start() {
        cq.requestNotification(false);
        drain();
    }

    /**
     * Busy polling: counts as activity now, so the loop keeps polling this CQ for another busy period. Called
     * by a thread that drains the CQ for the loop: such a drain does not re-arm the CQ while it is busy, so
     * the loop must still be polling it and re-arm it itself once it is idle.
     */
    @Override
    public void touch() {
        if (busyPollNanos > 0) {
            lastActivity = System.nanoTime();
            armed = false;
        }
    }

    /**
     * {@return whether the loop should call {@link #drain()} again without waiting for a notification:
     * busy polling, and the last drain did not arm the CQ}
     */
    @Override
    public boolean busy() {
        return busyPollNanos > 0 && !armed;
    }

    /**
     * Busy polling, after an empty poll: whether the busy period since the last completion ran out. Reads the
     * clock on every {@link #CLOCK_POLLS}th empty poll in a row only; the first read after completions
     * starts the period.
     */
    private boolean quiet() {
        if (++idlePolls < CLOCK_POLLS) {
            return false;
        }
        idlePolls = 0;
        long now = System.nanoTime();
        if (activeSinceClock) {
            activeSinceClock = false;
            lastActivity = now;
            return false;
        }
        return now - lastActivity >= busyPollNanos;
    }

    /** {@return whether a drain is running (its sink is being called)} */
    public boolean draining() {
        return draining;
    }

    /**
     * Takes the completions there are; unless busy polling, re-arms and polls once more, because a completion
     * that arrived between the last poll and the arming raises no notification.
     *
     * @return whether it took any completion
     */
    @Override
    public boolean drain() {
        if (cq.isClosed()) {
            return false;
        }
        draining = true;
        try {
            if (poll(false) > 0) {
                if (busyPollNanos > 0) {
                    // Busy for busyPollNanos from the next clock read (quiet()): no re-arm, no clock read now.
                    activeSinceClock = true;
                    idlePolls = 0;
                    armed = false;
                    return true;
                }
                rearm();
                return true;
            }
            if (busyPollNanos == 0 || quiet()) {
                return rearm();
            }
            return false;
        } finally {
            draining = false;
        }
    }

    /** Arms the CQ and takes what arrived before the arming; {@return whether there was any} */
    private boolean rearm() {
        boolean found = false;
        cq.requestNotification(false);
        while (pollAll() > 0) {
            found = true;
            cq.requestNotification(false);
        }
        armed = true;
        return found;
    }

    /**
     * The last poll before the owner leaves the loop: completions that arrived before a disconnect are
     * still delivered. A failing poll (the CQ already broken) is logged, not thrown: teardown goes on.
     */
    @Override
    public void finalDrain() {
        if (cq.isClosed()) {
            return;
        }
        draining = true;
        try {
            pollAll();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.DEBUG, "final drain failed", e);
        } finally {
            draining = false;
        }
    }

    private int pollAll() {
        return poll(true);
    }

    /**
     * Hands the CQ's completions to the sink, batch by batch.
     *
     * @param untilEmpty poll until a poll finds nothing; otherwise stop after a batch the poll did not fill,
     *                   which found the CQ empty after it. {@link #drain()} does: what arrived since is taken by
     *                   the poll after the re-arm, or (busy polling) by the loop's next turn, which comes at
     *                   once; one more poll would only cost a call into the provider on every drain that found
     *                   something
     * @return how many completions it took
     */
    private int poll(boolean untilEmpty) {
        int total = 0;
        int n;
        while ((n = cq.poll(wc)) > 0) {
            sink.polled(n);
            total += n;
            try {
                for (int i = 0; i < n; i++) {
                    sink.complete(wc, i);
                }
            } finally {
                sink.handled();
            }
            if (!untilEmpty && n < wc.capacity()) {
                break;
            }
        }
        return total;
    }
}
