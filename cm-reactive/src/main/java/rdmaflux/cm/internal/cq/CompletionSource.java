package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.rc.ConnectionLock;

/**
 * Where an RC connection's completions come from: its own CQ ({@link CqDrain}) or, on a shared CQ, its
 * inbox ({@link CqInbox}), which the completion loop fills from the shared CQ. The connection drains
 * either the same way, under its {@link ConnectionLock}, into the same {@link CqDrain.Sink}.
 *
 * <p>Threads: as {@link CqDrain}: the completion loop, or the thread holding the connection's lock when
 * the loop found it held; never two at once.
 */
public interface CompletionSource {
    /** The first drain, on the loop once the connection is established (arms a CQ). */
    void start();

    /**
     * Hands every completion there is to the sink.
     *
     * @return whether it found any
     */
    boolean drain();

    /** {@return whether the loop should drain again without waiting for a notification} */
    boolean busy();

    /** Busy polling: counts as activity now ({@link CqDrain#touch()}). */
    void touch();

    /** The last drain before the connection leaves its loop; logs rather than throws. */
    void finalDrain();
}
