package rdmaflux.cm.internal.leak;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import reactor.core.Disposable;
import rdmaflux.cm.RdmaLeak;
import rdmaflux.cm.RdmaLeakDetection;

/**
 * The leak detector's machinery ({@link RdmaLeakDetection}): which deliveries are tracked, a phantom
 * reference per tracked message, and the report and release of one that the garbage collector found
 * unreachable unreleased.
 *
 * <p>Threads: {@link #sample} and {@link #track} on the thread that delivers (a completion loop, or the
 * holder of a connection's lock); a {@link Tracker} is touched and closed on any thread; leaks are handled
 * on the detector's daemon thread (which runs only while messages are tracked), or on the thread of
 * {@link #collect}. A tracker is handled once:
 * {@link Tracker#state} decides between its release and its report.
 */
public final class LeakTracker {
    private static final System.Logger LOG = System.getLogger("rdmaflux.leak");
    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    /** The trackers of messages not yet released: what keeps each reference reachable until it is handled. */
    private static final Set<Tracker> LIVE = ConcurrentHashMap.newKeySet();
    private static final List<Consumer<? super RdmaLeak>> LISTENERS = new CopyOnWriteArrayList<>();
    private static final AtomicLong REPORTS = new AtomicLong();
    private static final AtomicLong TRACKS = new AtomicLong();
    /** Frames of the detector's own classes, left out of the stacks it reports. */
    private static final String OWN_PREFIX = "rdmaflux.cm.internal.leak.";
    private static final String WRAPPER = "rdmaflux.cm.internal.rc.TrackedMessage";
    /** Frames kept per stack in a report; the rest are counted. */
    private static final int MAX_FRAMES = 48;

    /** How long the detector's thread waits with nothing tracked before it ends. */
    private static final long IDLE_MILLIS = 1000;
    /** Whether the detector's thread runs: it runs only while messages are tracked, so none outlives them. */
    private static final AtomicBoolean RUNNING = new AtomicBoolean();

    private LeakTracker() {
    }

    /** {@return whether the delivery at hand is tracked, by the level and its sampling} */
    public static boolean sample() {
        RdmaLeakDetection.Level level = RdmaLeakDetection.level();
        return level == RdmaLeakDetection.Level.PARANOID || level == RdmaLeakDetection.Level.SAMPLED
                && ThreadLocalRandom.current().nextInt(RdmaLeakDetection.samplingInterval()) == 0;
    }

    /**
     * Tracks {@code message} from its delivery on the calling thread.
     *
     * @param message the object the application gets; the tracker must not reach it
     * @param release what gives its buffer back when it leaks (it must not reach {@code message} either)
     * @param connection the connection it came from, for the report
     * @param length its length, for the report
     * @return the tracker, for the message's accesses and its release
     */
    public static Tracker track(Object message, Runnable release, String connection, int length) {
        Tracker t = new Tracker(message, release, connection, length);
        LIVE.add(t);
        TRACKS.incrementAndGet();
        if (!RUNNING.get() && RUNNING.compareAndSet(false, true)) {
            Thread detector = new Thread(LeakTracker::run, "rdmaflux-leak-detector");
            detector.setDaemon(true);
            detector.start();
        }
        return t;
    }

    /**
     * For tests: collects garbage and handles every tracked message found unreachable by then, without
     * waiting for the detector's thread.
     *
     * @return how many leaks this call reported
     */
    public static int collect() {
        List<Tracker> tracked = new ArrayList<>(LIVE);
        System.gc();
        int found = 0;
        for (Tracker t : tracked) {
            // A phantom reference is cleared by the collection that finds its referent unreachable (and by
            // the release, which is no leak). The detector's thread may be handling it already: wait for it.
            if (t.refersTo(null) && t.state.get() != Tracker.RELEASED) {
                t.leaked();
                while (t.state.get() != Tracker.REPORTED) {
                    Thread.onSpinWait();
                }
                found++;
            }
        }
        return found;
    }

    /** {@return how many leaks were reported since the start} */
    public static long reported() {
        return REPORTS.get();
    }

    /** {@return how many messages were tracked since the start} */
    public static long trackedSinceStart() {
        return TRACKS.get();
    }

    /**
     * For tests that find a tracked message still held: what each one not released yet is, as a leak
     * report would say, whether it is reachable or not.
     *
     * @return one report per tracked message not released
     */
    public static List<String> unreleased() {
        List<String> all = new ArrayList<>();
        for (Tracker t : LIVE) {
            all.add(t.report().toString());
        }
        return all;
    }

    /** {@return how many tracked messages are not released yet (reachable or not)} */
    public static int tracked() {
        return LIVE.size();
    }

    /**
     * {@code RdmaLeakDetection.onLeak}.
     *
     * @param listener what to call with each leak
     * @return what ends the calls
     */
    public static Disposable onLeak(Consumer<? super RdmaLeak> listener) {
        LISTENERS.add(listener);
        return () -> LISTENERS.remove(listener);
    }

    /**
     * The detector's thread: handles the trackers the collector enqueued, and ends once nothing is tracked
     * for {@link #IDLE_MILLIS}. A message tracked meanwhile either sees {@link #RUNNING} still set (this
     * thread then finds it in {@link #LIVE} and goes on) or starts the next thread.
     */
    private static void run() {
        while (true) {
            try {
                if (QUEUE.remove(IDLE_MILLIS) instanceof Tracker t) {
                    t.leaked();
                    continue;
                }
            } catch (InterruptedException e) {
                // Nobody interrupts it on purpose: it ends by itself once idle.
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.ERROR, "rdmaflux leak detector: handling a leak failed", e);
            }
            if (LIVE.isEmpty()) {
                RUNNING.set(false);
                if (LIVE.isEmpty() || !RUNNING.compareAndSet(false, true)) {
                    return;
                }
            }
        }
    }

    /** A stack where a tracked message was touched; its frames are read only for a report. */
    private static final class Site extends Throwable {
        Site() {
            super(Thread.currentThread().getName(), null, false, true);
        }

        String describe() {
            StringBuilder b = new StringBuilder("thread ").append(getMessage());
            StackTraceElement[] frames = getStackTrace();
            int first = 0;
            while (first < frames.length && (frames[first].getClassName().startsWith(OWN_PREFIX)
                    || frames[first].getClassName().equals(WRAPPER))) {
                first++;
            }
            int end = Math.min(frames.length, first + MAX_FRAMES);
            for (int i = first; i < end; i++) {
                b.append("\n\tat ").append(frames[i]);
            }
            if (end < frames.length) {
                b.append("\n\t... ").append(frames.length - end).append(" more");
            }
            return b.toString();
        }
    }

    /**
     * One tracked message: where it was delivered and touched, and whether it was released.
     *
     * <p>Threads: any; the touches are guarded by the tracker's monitor, {@link #state} is the hand-over.
     */
    public static final class Tracker extends PhantomReference<Object> {
        private final Runnable release;
        private final String connection;
        private final int length;
        /**
         * The thread that delivered it: a loop's, whose stack says nothing the application can act on and would
         * cost a stack walk per message at paranoid.
         */
        private final String deliveredOn = Thread.currentThread().getName();
        /** The first access, then the latest ones in a ring; guarded by this. */
        private final Site[] touches = new Site[RdmaLeak.MAX_TOUCHES];
        private int touchCount;
        static final int TRACKED = 0;
        static final int RELEASED = 1;
        static final int LEAKING = 2;
        static final int REPORTED = 3;
        /** {@link #TRACKED}, then released by the application or leaking and then reported; decided once. */
        final AtomicInteger state = new AtomicInteger();

        private Tracker(Object message, Runnable release, String connection, int length) {
            super(message, QUEUE);
            this.release = release;
            this.connection = connection;
            this.length = length;
        }

        /** Any thread: the application accessed the message here. */
        public void touch() {
            Site s = new Site();
            synchronized (this) {
                int ring = touches.length - 1;
                touches[touchCount == 0 ? 0 : 1 + (touchCount - 1) % ring] = s;
                touchCount++;
            }
        }

        /** Any thread: the application released the message; it is no leak. */
        public void close() {
            if (state.compareAndSet(TRACKED, RELEASED)) {
                LIVE.remove(this);
                clear();
            }
        }

        /** Found unreachable: reports the leak and releases the message, unless it was released. */
        boolean leaked() {
            if (!state.compareAndSet(TRACKED, LEAKING)) {
                return false;
            }
            try {
                LIVE.remove(this);
                RdmaLeak leak = report();
                REPORTS.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, leak.toString());
                for (Consumer<? super RdmaLeak> l : LISTENERS) {
                    try {
                        l.accept(leak);
                    } catch (RuntimeException e) {
                        LOG.log(System.Logger.Level.ERROR, "an RdmaLeakDetection.onLeak listener failed", e);
                    }
                }
                release.run();
            } finally {
                state.set(REPORTED);
            }
            return true;
        }

        private RdmaLeak report() {
            List<String> sites = new ArrayList<>();
            synchronized (this) {
                if (touchCount > 0) {
                    sites.add(touches[0].describe());
                }
                int ring = touches.length - 1;
                int kept = Math.min(touchCount - 1, ring);
                for (int k = kept; k >= 1; k--) {
                    int nth = touchCount - k; // the nth touch, 1-based after the first
                    sites.add(touches[1 + (nth - 1) % ring].describe());
                }
            }
            return new RdmaLeak(connection, length, "delivered to receive() on thread " + deliveredOn, sites);
        }
    }
}
