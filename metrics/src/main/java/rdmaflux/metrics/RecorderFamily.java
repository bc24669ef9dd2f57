package rdmaflux.metrics;

import static rdmaflux.metrics.MicrometerRdmaRecorder.CM_EVENTS;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import rdmaflux.verbs.CmEventType;

/**
 * What a root {@link MicrometerRdmaRecorder} and its per-peer recorders share in one registry: the CM
 * event counters (never per peer) and the per-peer recorders made so far, up to the cap.
 *
 * <p>Threads: any; new peers are added under this object's lock, lookups read a concurrent map.
 */
final class RecorderFamily {
    final MeterRegistry registry;
    final RecorderSettings settings;
    final Counter[] cmEvents = new Counter[CmEventType.values().length];
    final Map<String, MicrometerRdmaRecorder> peers = new ConcurrentHashMap<>();
    final AtomicInteger peerCount = new AtomicInteger();
    /** The recorder the application holds; set once, before the family is used for peers. */
    MicrometerRdmaRecorder root;
    private MicrometerRdmaRecorder other;

    RecorderFamily(MeterRegistry registry, RecorderSettings settings) {
        this.registry = registry;
        this.settings = settings;
        // CM events belong to the process-wide event channel, not to a peer: never a remote tag.
        for (CmEventType type : CmEventType.values()) {
            cmEvents[type.ordinal()] = Counter.builder(CM_EVENTS)
                    .description("Connection manager events read from the event channel, by type")
                    .tags(settings.common()).tag(RdmaTags.TYPE, type.name().toLowerCase(Locale.ROOT))
                    .register(registry);
        }
    }

    /** {@return the recorder of {@code remote="other"}, for peers beyond the cap} */
    synchronized MicrometerRdmaRecorder overflow() {
        if (other == null) {
            other = new MicrometerRdmaRecorder(registry, settings, this, RecorderMeters.OTHER);
        }
        return other;
    }
}
