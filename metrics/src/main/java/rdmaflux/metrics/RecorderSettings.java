package rdmaflux.metrics;

import java.time.Duration;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;

/**
 * What a {@link MicrometerRdmaRecorder.Builder} fixed: the common tags, the {@code remote} cap and the
 * histogram buckets. Immutable; the arrays were copied and checked by the builder and are never written.
 *
 * @param common tags every meter carries
 * @param maxRemotes how many peer addresses get their own {@code remote} value; 0: no {@code remote} tag
 * @param latencyBuckets the {@link MicrometerRdmaRecorder#OPERATION_LATENCY} boundaries
 * @param stepBuckets the {@link MicrometerRdmaRecorder#CONNECT_STEP} boundaries
 */
record RecorderSettings(Tags common, int maxRemotes, Duration[] latencyBuckets, Duration[] stepBuckets) {
    /** {@return the meters of one tag set: the common tags, and {@code remote} when not {@code null}} */
    RecorderMeters meters(MeterRegistry registry, String remote) {
        return new RecorderMeters(registry, remote == null ? common : common.and(RdmaTags.REMOTE, remote),
                latencyBuckets, stepBuckets);
    }

    /** {@return these settings without the {@code remote} tag} */
    RecorderSettings withoutRemotes() {
        return new RecorderSettings(common, 0, latencyBuckets, stepBuckets);
    }
}
