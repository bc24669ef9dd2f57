package rdmaflux.metrics;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names rdmaflux's observations and their key values. {@link DefaultRdmaObservationConvention} is the
 * default; an application that wants other names or keys implements this interface (or extends nothing
 * and delegates to the default) and passes it to {@link RdmaObservations}, or registers a global
 * convention on its {@code ObservationRegistry}.
 */
public interface RdmaObservationConvention extends ObservationConvention<RdmaObservationContext> {
    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof RdmaObservationContext;
    }
}
