package rdmaflux.metrics;

import rdmaflux.cm.RdmaRecorder;

/**
 * The entry point for code that turns metrics on by configuration and may run without Micrometer.
 *
 * <p>Nothing in this class's signatures names a Micrometer type, so it loads without Micrometer on
 * the class path; {@link #globalRecorder()} then fails with a message that says what to add, instead
 * of a {@link NoClassDefFoundError} from deep inside the first connection.
 */
public final class RdmaMetrics {
    /** The class whose presence means Micrometer is usable. */
    static final String MICROMETER_CLASS = "io.micrometer.core.instrument.MeterRegistry";

    private RdmaMetrics() {
    }

    /** {@return whether Micrometer (micrometer-core) can be loaded from this class's class loader} */
    public static boolean isMicrometerAvailable() {
        try {
            Class.forName(MICROMETER_CLASS, false, RdmaMetrics.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * Fails unless Micrometer is usable.
     *
     * @throws IllegalStateException naming the missing dependency
     */
    public static void requireMicrometer() {
        if (!isMicrometerAvailable()) {
            throw new IllegalStateException("rdmaflux metrics are enabled but Micrometer is not on the class path: "
                    + "add io.micrometer:micrometer-core (1.16 or newer; rdmaflux-metrics declares it, so a missing "
                    + "jar means it was excluded or the class path was assembled by hand) and a registry such as "
                    + "io.micrometer:micrometer-registry-prometheus, or leave ConnectionOptions' recorder at the "
                    + "default RdmaRecorder.NOOP");
        }
    }

    /**
     * A recorder on Micrometer's global composite registry ({@code Metrics.globalRegistry}); add the
     * application's registries to it.
     *
     * @return a new recorder (recorders on one registry share their gauges)
     * @throws IllegalStateException when Micrometer is missing
     */
    public static RdmaRecorder globalRecorder() {
        requireMicrometer();
        return Global.recorder();
    }

    /** Touches Micrometer only once the check above has passed. */
    private static final class Global {
        static RdmaRecorder recorder() {
            return MicrometerRdmaRecorder.of(io.micrometer.core.instrument.Metrics.globalRegistry);
        }
    }
}
