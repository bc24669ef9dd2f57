package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.internal.loop.Timers;

import reactor.core.Disposable;

/**
 * Probes the peer of a connection that saw no completion for a while
 * ({@link ConnectionOptions#keepalive()}). It ticks every half period; after two ticks in a row without
 * {@link #touch()}, it runs the probe. A probe is an acknowledged send, so a peer host that died fails the
 * connection once the transport retries run out, even when the application sends nothing.
 *
 * <p>Threads: the completion loop owns it; {@link #touch()} is called for every completion, so it is
 * one plain increment.
 */
public final class Keepalive {
    private final Timers timers;
    private final long tickNanos;
    private final Runnable probe;
    private final Runnable task = this::tick;
    private int activity;
    private int seen;
    private int idleTicks;
    private Disposable timer;
    private boolean stopped;

    /**
     * A keepalive that has not started.
     *
     * @param timers where ticks run (the completion loop's timers)
     * @param idleNanos the idle time before a probe; 0 turns it off
     * @param probe sends the probe (it decides whether one can go now)
     */
    Keepalive(Timers timers, long idleNanos, Runnable probe) {
        this.timers = timers;
        this.tickNanos = idleNanos > 0 ? Math.max(1, idleNanos / 2) : 0;
        this.probe = probe;
    }

    /**
     * Something completed: the connection is not idle. Called where completions are dispatched (usually the
     * completion loop); an increment the loop's tick misses only costs one probe.
     */
    void touch() {
        activity++;
    }

    /** Starts ticking (no-op when off). */
    void start() {
        if (tickNanos > 0 && !stopped) {
            timer = timers.schedule(task, tickNanos);
        }
    }

    /** Stops for good. */
    void stop() {
        stopped = true;
        if (timer != null) {
            timer.dispose();
            timer = null;
        }
    }

    private void tick() {
        if (stopped) {
            return;
        }
        if (activity != seen) {
            seen = activity;
            idleTicks = 0;
        } else if (++idleTicks >= 2) {
            idleTicks = 0;
            probe.run();
        }
        timer = timers.rearm(timer, task, tickNanos);
    }
}
