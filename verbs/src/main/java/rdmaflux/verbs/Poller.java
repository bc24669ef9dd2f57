package rdmaflux.verbs;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Waits until one of several file descriptors is readable, and can be woken from another thread: the
 * core of an event loop over event channels and completion channels.
 *
 * <p>{@link #await} runs {@code poll(2)} on the descriptors plus an internal eventfd that
 * {@link #wakeup()} signals; it allocates only a small native array per call, so loops should call it
 * when there is nothing to do, not per message.
 */
public final class Poller implements AutoCloseable {
    private final int wakeFd;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Creates a poller with its wakeup eventfd. */
    public Poller() {
        this.wakeFd = Posix.eventFd();
    }

    /**
     * Waits for readability.
     *
     * @param fds descriptors to watch (any length, may be empty)
     * @param ready filled with whether each became readable; at least {@code fds.length} long
     * @param timeoutMillis -1 to wait until readable or woken
     * @return whether anything happened (a descriptor is readable or {@link #wakeup()} was called);
     *         false on timeout
     */
    public boolean await(int[] fds, boolean[] ready, int timeoutMillis) {
        if (closed.get()) {
            throw new IllegalStateException("Poller is closed");
        }
        int[] all = new int[fds.length + 1];
        System.arraycopy(fds, 0, all, 0, fds.length);
        all[fds.length] = wakeFd;
        boolean[] r = new boolean[all.length];
        int n = Posix.pollIn(all, r, timeoutMillis);
        System.arraycopy(r, 0, ready, 0, fds.length);
        if (r[fds.length]) {
            Posix.eventFdDrain(wakeFd);
        }
        return n > 0;
    }

    /**
     * Makes a concurrent or the next {@link #await} return at once. Safe from any thread, also racing
     * {@link #close()}: once closed it does nothing.
     */
    public void wakeup() {
        // Under the lock close() takes: a wake-up that saw the poller open must not write to a descriptor
        // closed meanwhile (EBADF, or worse a number reused by another file). The loop whose task queue
        // woke it may have ended and closed it between the check and the write.
        synchronized (closed) {
            if (!closed.get()) {
                Posix.eventFdSignal(wakeFd);
            }
        }
    }

    /** Closes the wakeup descriptor; idempotent. */
    @Override
    public void close() {
        synchronized (closed) {
            if (closed.compareAndSet(false, true)) {
                Posix.close(wakeFd);
            }
        }
    }
}
