package rdmaflux.metrics;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names rdmaflux's observations and their key values. {@link DefaultRdmaObservationConvention} is the
 * default; an application that wants other names or keys implements this interface (or extends the
 * default) and passes it to {@link RdmaObservations}, or registers a global convention on its
 * {@code ObservationRegistry}.
 *
 * <p>Threads: called where an observation starts (a subscribing thread, a server's CM loop) and where it stops
 * (a CM loop, a completion loop, the options' scheduler), concurrently for different observations:
 * implementations must be thread-safe, and should be stateless.
 */
public interface RdmaObservationConvention extends ObservationConvention<RdmaObservationContext> {
    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof RdmaObservationContext;
    }
}
