package example.consumer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.metrics.MicrometerRdmaRecorder;

/** rdmaflux's Micrometer recorder on a registry of its own. Loaded only when Micrometer is there. */
final class Metered {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    /**
     * @param base the options so far
     * @return them, recording into this registry
     */
    ConnectionOptions options(ConnectionOptions base) {
        return base.toBuilder().recorder(MicrometerRdmaRecorder.of(registry)).build();
    }

    /** {@return the messages sent, on every connection that used these options} */
    long messagesSent() {
        return Math.round(registry.find(MicrometerRdmaRecorder.MESSAGES_SENT).counters().stream()
                .mapToDouble(Counter::count).sum());
    }
}
