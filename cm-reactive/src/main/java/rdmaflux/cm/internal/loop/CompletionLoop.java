package rdmaflux.cm.internal.loop;

import rdmaflux.cm.internal.util.CmLog;

import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import rdmaflux.verbs.CompletionChannel;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.RdmaContext;

/**
 * A completion loop: one thread that drains the CQs assigned to it. The CQs of one device share one
 * completion channel per loop, so a wake-up waits on one descriptor per device and reads which CQs have
 * completions: its cost does not grow with the number of connections. While a connection busy polls, the
 * loop spins ({@link EventLoop#spins()}): it polls that CQ on every turn without a system call and looks at
 * its channels every {@link EventLoop#DESCRIPTOR_TURNS} turns; other loops are unaffected.
 * {@link Loops#nextCompletionLoop(boolean)} puts busy-polling connections on a loop that already spins, so
 * one thread spins for all of them.
 *
 * <p>The channels are the loop's own, like the descriptors a selector waits on: it polls them and closes
 * them as it ends. What the layers above keep per device (the CQs the loop's connections share on a
 * device, the protection domain) belongs to the loops' per-device resources, not to the loop.
 *
 * <p>A removed device's channel is closed before the loop ends ({@link #removeDevice}), once nothing on the
 * device is left on the loop.
 *
 * <p>Threads: {@link #channel} is called on the CM loop (where CQs are created) and is concurrent;
 * everything else is owned by the loop thread.
 */
public final class CompletionLoop extends EventLoop {
    /** A connection's side of the loop. */
    public interface Handler {
        /**
         * Drain the CQ, re-arm it and drain once more; called on the loop thread.
         *
         * @return whether it took any completion
         */
        boolean drain();

        /** {@return whether the loop should poll this handler without waiting for its channel} */
        boolean busy();
    }

    /** A handler and whether it is on the busy list; loop thread only. */
    private static final class Entry {
        final Handler handler;
        boolean polled;

        Entry(Handler handler) {
            this.handler = handler;
        }
    }

    private static final CompletionChannel[] NO_CHANNELS = new CompletionChannel[0];

    private final int index;
    /** One channel per device, made on first use; closed when the loop ends. */
    private final Map<RdmaContext, CompletionChannel> channels = new ConcurrentHashMap<>();
    /** The channels polled and their descriptors, same order; replaced, never changed in place. */
    private volatile CompletionChannel[] polled = NO_CHANNELS;
    private volatile int[] fds = new int[0];
    /** Loop thread only: the handler of each registered CQ. */
    private final IdentityHashMap<CompletionQueue, Entry> handlers = new IdentityHashMap<>();
    /** Loop thread only: handlers polled on every turn (busy polling, or just registered). */
    private Entry[] busy = new Entry[8];
    private int busyCount;
    /** Busy-polling connections given this loop and not yet gone ({@link Loops#nextCompletionLoop(boolean)}). */
    private final AtomicInteger busyPollers = new AtomicInteger();

    /**
     * Creates and starts the loop.
     *
     * @param name the thread's name; the thread starts now
     * @param index this loop's number among its siblings: CQs on it use completion vector
     *              {@code index % vectors}
     */
    CompletionLoop(String name, int index) {
        super(name);
        this.index = index;
        start();
    }

    /**
     * The completion vector for CQs this loop drains.
     *
     * @param vectors the device's completion vectors
     * @return the vector for CQs drained by this loop
     */
    public int completionVector(int vectors) {
        return vectors <= 0 ? 0 : index % vectors;
    }

    /**
     * The channel CQs drained by this loop notify, one per device; any thread (CQs are made on the CM
     * loop). The loop starts waiting on a new channel before the first CQ on it is registered.
     *
     * @param device the device's shared context ({@link rdmaflux.verbs.CmId#sharedContext()})
     * @return this loop's channel for that device
     */
    public CompletionChannel channel(RdmaContext device) {
        CompletionChannel c = channels.get(device);
        if (c != null) {
            return c;
        }
        synchronized (channels) {
            c = channels.get(device);
            if (c == null) {
                c = device.createCompletionChannel();
                channels.put(device, c);
                CompletionChannel[] next = Arrays.copyOf(polled, polled.length + 1);
                next[next.length - 1] = c;
                int[] nextFds = Arrays.copyOf(fds, next.length);
                nextFds[next.length - 1] = c.fd();
                // Appended: the indices of descriptors a turn already polled stay valid.
                polled = next;
                fds = nextFds;
            }
            return c;
        }
    }

    /**
     * Loop thread only: closes this loop's channel for a removed device (and any CQ still on it) and stops
     * polling it; the other devices' channels are polled as before. On the loop thread, because a turn's
     * readiness array is indexed by the channels it polled: a channel taken out between the poll and
     * {@link #onReady} would shift the others. Called once no connection, endpoint or group on the device
     * has a CQ left on this loop, so its descriptor is closed while nothing waits on it.
     *
     * @param device the removed device's shared context
     */
    public void removeDevice(RdmaContext device) {
        assert inLoop() : "loop thread only";
        CompletionChannel c;
        synchronized (channels) {
            c = channels.remove(device);
            if (c == null) {
                return;
            }
            CompletionChannel[] next = new CompletionChannel[polled.length - 1];
            int[] nextFds = new int[next.length];
            CompletionChannel[] was = polled;
            int[] wasFds = fds;
            for (int i = 0, j = 0; i < was.length; i++) {
                if (was[i] != c) {
                    next[j] = was[i];
                    nextFds[j++] = wasFds[i];
                }
            }
            polled = next;
            fds = nextFds;
        }
        try {
            c.close();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + c + " of removed " + device + " failed", e);
        }
    }

    /**
     * Loop thread only: {@code cq}'s completions go to {@code handler}. It is polled on the next turn,
     * whatever its channel says, so completions that arrived before are not left waiting.
     */
    public void register(CompletionQueue cq, Handler handler) {
        assert inLoop() : "loop thread only";
        Entry e = new Entry(handler);
        handlers.put(cq, e);
        poll(e);
    }

    /** Loop thread only; after it returns the loop never calls the handler again. */
    public void unregister(CompletionQueue cq) {
        assert inLoop() : "loop thread only";
        Entry e = handlers.remove(cq);
        if (e != null && e.polled) {
            for (int i = 0; i < busyCount; i++) {
                if (busy[i] == e) {
                    busy[i] = busy[--busyCount];
                    busy[busyCount] = null;
                    break;
                }
            }
            e.polled = false;
        }
    }

    private void poll(Entry e) {
        if (e.polled) {
            return;
        }
        if (busyCount == busy.length) {
            busy = Arrays.copyOf(busy, busyCount * 2);
        }
        busy[busyCount++] = e;
        e.polled = true;
    }

    /** {@return busy-polling connections on this loop now; any thread} */
    public int busyPollers() {
        return busyPollers.get();
    }

    /**
     * A busy-polling connection was given this loop ({@code +1}) or left it ({@code -1}); any thread.
     *
     * @param delta +1 or -1
     */
    public void busyPollers(int delta) {
        busyPollers.addAndGet(delta);
    }

    @Override
    public int[] fds() {
        return fds;
    }

    @Override
    boolean spins() {
        return busyCount > 0;
    }

    @Override
    void onReady(boolean[] ready) {
        // The array that was polled: ready[i] belongs to channels[i] even if a channel was added since.
        CompletionChannel[] chans = polled;
        int n = Math.min(chans.length, ready.length);
        for (int i = 0; i < n; i++) {
            if (ready[i]) {
                CompletionQueue cq;
                while ((cq = chans[i].tryGetEvent()) != null) {
                    Entry e = handlers.get(cq);
                    if (e != null) {
                        drain(e);
                        if (e.handler.busy()) {
                            poll(e);
                        }
                    }
                }
            }
        }
    }

    /** Busy handlers, and new ones: polled on every turn until they go quiet and re-arm. */
    @Override
    boolean spin() {
        boolean found = false;
        for (int i = 0; i < busyCount; ) {
            Entry e = busy[i];
            found |= drain(e);
            // The handler may have unregistered itself or another one meanwhile.
            if (busy[i] == e && !e.handler.busy()) {
                e.polled = false;
                busy[i] = busy[--busyCount];
                busy[busyCount] = null;
            } else {
                i++;
            }
        }
        return found;
    }

    private boolean drain(Entry e) {
        try {
            return e.handler.drain();
        } catch (RuntimeException x) {
            // One connection's failure must not stop the loop from serving the others.
            CmLog.LOG.log(System.Logger.Level.ERROR, "draining a CQ failed on " + thread().getName(), x);
            return true;
        }
    }

    @Override
    void onExit() {
        synchronized (channels) {
            // Closing a channel closes what still uses it; by now every connection on the loop has left.
            for (CompletionChannel c : channels.values()) {
                c.close();
            }
            channels.clear();
            polled = NO_CHANNELS;
            fds = new int[0];
        }
    }
}
