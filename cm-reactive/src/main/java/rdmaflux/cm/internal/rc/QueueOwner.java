package rdmaflux.cm.internal.rc;

/** What the queue tells its connection, and the connection's thread the queue checks its callers against. */
public interface QueueOwner {
    /** Completion loop: the orderly close message left; the connection may disconnect now. */
    void closeSent();

    /**
     * Completion loop: a work request failed; the connection fails.
     *
     * @param error the typed failure
     */
    void transferFailed(Throwable error);

    /** {@return why the connection is going away, to report instead of a flush error; or {@code null}} */
    Throwable failure();

    /**
     * CM loop: {@code task} runs on the CM loop once the id, and with it the QP, was destroyed (also
     * when this queue failed to be made after it asked).
     *
     * @param task what to run then
     */
    void afterIdClosed(Runnable task);

    /** {@return whether the caller is the connection's CM loop, which owns the queue's set-up and teardown} */
    boolean onCmLoop();
}
