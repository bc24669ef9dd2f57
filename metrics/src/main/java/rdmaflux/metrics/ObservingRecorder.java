package rdmaflux.metrics;

import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import reactor.util.context.ContextView;
import rdmaflux.cm.RdmaRecorder;

/**
 * A recorder that makes each connection attempt an {@link Observation} ({@code rdmaflux.connect} for a
 * client, {@code rdmaflux.accept} for a server) and hands everything to its delegate. The observation starts
 * in {@link #attempt}, with the observation in the Reactor context under {@link RdmaObservations#PARENT_KEY}
 * as its parent (for a client without one there, the registry's current observation), and stops in the
 * attempt's {@code connectOutcome}: established, failed (with the exception) or cancelled.
 *
 * <p>Only attempts allocate (a context, an observation, one small recorder); the per-message calls of
 * the connection go through one more virtual call and allocate nothing.
 *
 * <p>Threads: {@code attempt} on the subscribing thread (client) or the server's CM loop; the outcome on
 * a CM loop or the options' scheduler; the rest where the delegate's calls run.
 */
final class ObservingRecorder extends ForwardingRecorder {
    private final ObservationRegistry registry;
    private final RdmaObservationConvention convention;

    ObservingRecorder(ObservationRegistry registry, RdmaObservationConvention convention, RdmaRecorder delegate) {
        super(delegate);
        this.registry = java.util.Objects.requireNonNull(registry, "registry");
        this.convention = convention;
    }

    @Override
    public RdmaRecorder attempt(boolean server, InetSocketAddress peer, ContextView context) {
        RdmaRecorder inner = delegate.attempt(server, peer, context);
        if (registry.isNoop()) {
            return inner;
        }
        RdmaObservationContext.Kind kind = server ? RdmaObservationContext.Kind.ACCEPT
                : RdmaObservationContext.Kind.CONNECT;
        // An accept starts on the server's CM loop, whose thread-local observation belongs to nobody:
        // only a client, on its subscriber's thread, falls back to the current one.
        Observation parent = RdmaObservations.parentOf(context, server ? null : registry);
        Observation o = RdmaObservations.observation(kind, peer, null, convention, registry, parent).start();
        return new Attempt(inner, o);
    }

    /** One attempt and the connection it becomes: ends the observation with the attempt's outcome, once. */
    private static final class Attempt extends ForwardingRecorder {
        private final Observation observation;
        private final AtomicBoolean ended = new AtomicBoolean();

        Attempt(RdmaRecorder delegate, Observation observation) {
            super(delegate);
            this.observation = observation;
        }

        @Override
        public void connectOutcome(boolean server, Outcome outcome, Throwable error) {
            delegate.connectOutcome(server, outcome, error);
            end(outcome, error);
        }

        @Override
        public void connectOutcome(boolean server, Outcome outcome, String cause) {
            delegate.connectOutcome(server, outcome, cause);
            end(outcome, null);
        }

        private void end(Outcome outcome, Throwable error) {
            if (!ended.compareAndSet(false, true)) {
                return;
            }
            RdmaObservations.stop(observation, switch (outcome) {
                case SUCCESS -> RdmaTags.SUCCESS;
                case FAILURE -> RdmaTags.FAILURE;
                case CANCELLED -> RdmaTags.CANCELLED;
            }, error);
        }
    }
}
