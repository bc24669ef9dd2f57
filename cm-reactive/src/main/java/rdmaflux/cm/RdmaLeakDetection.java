package rdmaflux.cm;

import java.util.Locale;
import java.util.Objects;
import java.util.function.Consumer;

import reactor.core.Disposable;

/**
 * Finds received messages that were never released: an {@link RdmaMessage} that becomes unreachable while
 * still holding its receive buffer (and, with the credits protocol, the sender's credit) is reported, with
 * where it was received and where the application last touched it, and then released, so the connection
 * gets its buffer back. Netty's {@code ResourceLeakDetector} is the model.
 *
 * <p>A tracked message is an object of its own delivery (also with
 * {@link ConnectionOptions#recycledMessages()}), and each access to its bytes ({@code data()},
 * {@code asByteBuffer()}, {@code toByteArray()}) and {@code retain()} records the caller's stack: the
 * tracking costs an allocation and a stack walk per access, which is why it is sampled by default.
 * A report needs a garbage collection to find the message unreachable, so it comes some time after the
 * leak.
 *
 * <p>Reports go to the {@link System.Logger} {@code rdmaflux.leak} at {@code ERROR} and to the listeners of
 * {@link #onLeak}. Test suites run at {@link Level#PARANOID} and fail on any report, as rdmaflux's own
 * integration tests do ({@code -Drdmaflux.leakDetection.level=paranoid}).
 *
 * <p>Threads: any; the level may change while messages flow (a message is tracked or not when it is
 * delivered).
 */
public final class RdmaLeakDetection {
    /** The system property that sets the level at start: {@code off}, {@code sampled} or {@code paranoid}. */
    public static final String LEVEL_PROPERTY = "rdmaflux.leakDetection.level";
    /** The system property that sets {@link #samplingInterval()} at start. */
    public static final String SAMPLING_INTERVAL_PROPERTY = "rdmaflux.leakDetection.samplingInterval";
    /** The sampling interval when {@link #SAMPLING_INTERVAL_PROPERTY} is not set (Netty's default too). */
    public static final int DEFAULT_SAMPLING_INTERVAL = 128;

    /** How many received messages are tracked. */
    public enum Level {
        /** None: no allocation and no stack walk for it, and no report. */
        OFF,
        /** One message in {@link #samplingInterval()} on average, chosen at random (the default). */
        SAMPLED,
        /** Every message: for tests, and for hunting a leak that sampling did not catch. */
        PARANOID
    }

    private static volatile Level level = parseLevel(System.getProperty(LEVEL_PROPERTY));
    private static final int SAMPLING_INTERVAL = parseInterval(System.getProperty(SAMPLING_INTERVAL_PROPERTY));

    private RdmaLeakDetection() {
    }

    /** {@return the current level; at start, what {@link #LEVEL_PROPERTY} says, else {@link Level#SAMPLED}} */
    public static Level level() {
        return level;
    }

    /**
     * Sets the level for the messages delivered from now on; messages tracked before stay tracked.
     *
     * @param l the level
     */
    public static void level(Level l) {
        level = Objects.requireNonNull(l, "level");
    }

    /** {@return at {@link Level#SAMPLED}, one message in this many is tracked, on average} */
    public static int samplingInterval() {
        return SAMPLING_INTERVAL;
    }

    /**
     * Calls {@code listener} with each leak found from now on, on the detector's thread (or on the thread of a
     * garbage collection requested by a test), after it was logged and before the message is released.
     * The listener must not block.
     *
     * @param listener what to call
     * @return what ends the calls
     */
    public static Disposable onLeak(Consumer<? super RdmaLeak> listener) {
        return Implementation.onLeak(Objects.requireNonNull(listener, "listener"));
    }

    static Level parseLevel(String value) {
        if (value == null || value.isBlank()) {
            return Level.SAMPLED;
        }
        try {
            return Level.valueOf(value.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(LEVEL_PROPERTY + " must be off, sampled or paranoid, got '" + value
                    + "'", e);
        }
    }

    static int parseInterval(String value) {
        if (value == null || value.isBlank()) {
            return DEFAULT_SAMPLING_INTERVAL;
        }
        int n;
        try {
            n = Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            n = 0;
        }
        if (n < 1) {
            throw new IllegalArgumentException(SAMPLING_INTERVAL_PROPERTY + " must be a positive integer, got '"
                    + value + "'");
        }
        return n;
    }
}
