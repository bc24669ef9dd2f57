package rdmaflux.cm.internal.rc;

/**
 * The receive side of one RC connection as its {@link RcQueue} sees it: the buffers the peer's SENDs land
 * in, lent to the application as {@link ReceiveSlot}s, and their re-posting. {@link ReceiveRing} is the
 * connection's own ring of buffers on its queue pair.
 *
 * <p>Threads: the completion loop maps a completion to its slot; the application releases slots on any
 * thread ({@link #released}, which never waits for the connection's lock); everything else runs under the
 * connection's {@link ConnectionLock}, whose holder reposts the released buffers, in one
 * {@code ibv_post_recv}, before letting go.
 */
public interface Receives {
    /** Marks the work request id of a receive; the rest of the id is the slot's index. */
    long TAG = 1L << 62;

    /**
     * {@return whether a completion's work request id is a receive's}
     *
     * @param wrId the completion's work request id
     */
    static boolean isReceive(long wrId) {
        return (wrId & TAG) != 0;
    }

    /**
     * Completion loop: the slot a receive completion names. Its receive was consumed, so the implementation
     * counts it out of what it has posted.
     *
     * @param wrId the completion's work request id ({@link #isReceive})
     * @return its slot
     */
    ReceiveSlot slot(long wrId);

    /**
     * Under the lock: a data message just delivered is held by the application; whether its credit may
     * go back to the peer now, its buffer charged to a shared reserve (then {@link ReceiveSlot#lent} is
     * set). A connection's own ring never lends.
     *
     * @param slot the slot
     * @return whether the credit is owed now, as if the message were released
     */
    default boolean lend(ReceiveSlot slot) {
        return false;
    }

    /**
     * Under the lock: a receive into {@code slot} failed, or its message broke the protocol: the slot is
     * never delivered. A connection's own buffer dies with it; a pool's goes back to the pool.
     *
     * @param slot the slot
     */
    default void failed(ReceiveSlot slot) {
        slot.state(ReceiveSlot.DEAD);
    }

    /**
     * Any thread, after {@link ReceiveSlot#take}: the slot waits for the lock's holder (this thread, if the
     * lock is free), who reposts it and counts its credit. Never waits for the lock.
     *
     * @param slot the slot, taken from the application
     */
    void released(ReceiveSlot slot);

    /** {@return whether released slots wait for the lock's holder; any thread} */
    boolean hasReleased();

    /**
     * Under the lock: writes a repost of every released slot, or, when the connection went away
     * ({@code dead}), marks them dead; may count their credits in {@code window} (a shared pool does; a
     * connection's own ring counts them as it posts them, {@link #postReposts}). The reposts leave with a
     * {@link #postReposts}, which must come before any credit counted here reaches the peer.
     *
     * @param dead whether the queue pair is gone (nothing is posted again)
     * @param window the connection's credits
     * @return whether credits became owed
     */
    boolean takeReleased(boolean dead, CreditWindow window);

    /**
     * Under the lock: writes the repost of a slot whose message is not delivered (a control message).
     *
     * @param slot the slot
     */
    void repost(ReceiveSlot slot);

    /**
     * Under the lock: posts what {@link #repost} and {@link #takeReleased} wrote, as one chain; a
     * connection's own ring may keep a few credited reposts for a later chain ({@link ReceiveRing}).
     *
     * @param window the connection's credits
     * @return whether credits became owed (the posted buffers' credits, where they are counted at the post)
     */
    boolean postReposts(CreditWindow window);

    /** CM loop, after the queue pair was destroyed: frees the buffers' registration. Idempotent. */
    void close();
}
