package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Waits until one of several file descriptors is readable, and can be woken from another thread: the
 * core of an event loop over event channels and completion channels.
 *
 * <p>{@link #await} runs {@code poll(2)} on the descriptors plus an internal eventfd that
 * {@link #wakeup()} signals. The poller keeps the native {@code pollfd} array between calls and rewrites
 * it only when the descriptors passed differ from the previous call's, so a loop that waits on the same
 * descriptors turn after turn allocates nothing per wait, and {@link #wakeup()} allocates nothing either.
 * One thread at a time uses the kept array (a loop's own thread, typically); a thread that calls
 * {@link #await} while another is waiting gets a temporary array of its own for that call.
 */
public final class Poller implements AutoCloseable {
    private final int wakeFd;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Held by the thread using {@link #pollFds} and {@link #watched}. */
    private final AtomicBoolean inUse = new AtomicBoolean();
    /** The wakeup eventfd at index 0, then {@link #watched}; auto arena: replaced arrays are collected. */
    private MemorySegment pollFds;
    /** How many entries {@link #pollFds} has room for. */
    private int capacity;
    /** The descriptors {@link #pollFds} watches after the wakeup one, as last passed to {@link #await}. */
    private int[] watched = new int[0];

    /** Creates a poller with its wakeup eventfd. */
    public Poller() {
        this.wakeFd = Posix.eventFd();
        rebuild(watched);
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
        if (ready.length < fds.length) {
            throw new IllegalArgumentException("ready has " + ready.length + " entries for " + fds.length + " descriptors");
        }
        if (!inUse.compareAndSet(false, true)) {
            // Another thread waits in the kept array: this call must not rewrite it under that poll.
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment own = arena.allocate(Posix.POLLFD_SIZE * (fds.length + 1), 4);
                fill(own, fds);
                return poll(own, fds, ready, timeoutMillis);
            }
        }
        try {
            if (!sameAsWatched(fds)) {
                rebuild(fds);
            }
            return poll(pollFds, fds, ready, timeoutMillis);
        } finally {
            inUse.set(false);
        }
    }

    private boolean poll(MemorySegment pfds, int[] fds, boolean[] ready, int timeoutMillis) {
        int n = Posix.poll(pfds, fds.length + 1, timeoutMillis);
        for (int i = 0; i < fds.length; i++) {
            ready[i] = Posix.ready(pfds, i + 1);
        }
        if (Posix.ready(pfds, 0)) {
            Posix.eventFdDrain(wakeFd);
        }
        return n > 0;
    }

    /** Compares contents, not identity: a caller may change its array in place between waits. */
    private boolean sameAsWatched(int[] fds) {
        int[] w = watched;
        if (w.length != fds.length) {
            return false;
        }
        for (int i = 0; i < fds.length; i++) {
            if (w[i] != fds[i]) {
                return false;
            }
        }
        return true;
    }

    private void rebuild(int[] fds) {
        int entries = fds.length + 1;
        if (entries > capacity) {
            // Room to grow a little: a loop gains descriptors one at a time.
            capacity = Math.max(4, Integer.highestOneBit(entries - 1) << 1);
            pollFds = Arena.ofAuto().allocate(Posix.POLLFD_SIZE * capacity, 4);
        }
        fill(pollFds, fds);
        watched = fds.clone();
    }

    private void fill(MemorySegment pfds, int[] fds) {
        Posix.setPollFd(pfds, 0, wakeFd);
        for (int i = 0; i < fds.length; i++) {
            Posix.setPollFd(pfds, i + 1, fds[i]);
        }
    }

    /**
     * Makes a concurrent or the next {@link #await} return at once. Safe from any thread, also racing
     * {@link #close()}: once closed it does nothing. Allocates nothing.
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
