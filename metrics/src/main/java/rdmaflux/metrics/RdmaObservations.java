package rdmaflux.metrics;

import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaRecorder;

/**
 * Micrometer Observations of rdmaflux: connects, accepts and, on request, single operations, each nested
 * under the observation found in the Reactor {@code Context} of its subscriber, so a trace shows them inside
 * the application's own spans and {@code DefaultMeterObservationHandler} makes each a timer.
 *
 * <ul>
 *   <li>{@link #recorder}: a recorder for {@code ConnectionOptions.recorder} that observes every connect
 *       ({@code rdmaflux.connect}) and accept ({@code rdmaflux.accept}) made with those options, and hands
 *       everything to the recorder it wraps (the meters). A connect's parent is the observation in its
 *       subscriber's context; an accept's, the one in the context of the subscriber of
 *       {@code RdmaServer.bind}.</li>
 *   <li>{@link #connect}: one connect, observed from its subscription, with options that need not carry
 *       that recorder.</li>
 *   <li>{@link #operation}: an operation ({@code rdmaflux.operation}), for {@code Mono.transform}. Opt-in per
 *       call: nothing is observed, and nothing allocated, for operations that do not use it.</li>
 * </ul>
 *
 * <p>The parent is read under {@link #PARENT_KEY}, Micrometer's key
 * ({@code ObservationThreadLocalAccessor.KEY}), which Reactor's {@code Micrometer.observation} and Spring
 * put there; where the context has none, a connect or an operation takes the registry's current observation
 * on the subscribing thread. Names and keys: {@link RdmaObservationDocumentation}, made by an
 * {@link RdmaObservationConvention} ({@link DefaultRdmaObservationConvention} by default).
 *
 * <p>Threads: any. An observation starts on the subscribing thread (an accept: on the server's CM loop) and
 * stops where its result is signalled.
 */
public final class RdmaObservations {
    /** The client connect observation's name. */
    public static final String CONNECT = "rdmaflux.connect";
    /** The server accept observation's name. */
    public static final String ACCEPT = "rdmaflux.accept";
    /** The operation observation's name. */
    public static final String OPERATION = "rdmaflux.operation";
    /**
     * Where the parent observation is looked up in the Reactor context: Micrometer's key, a constant, so
     * reading it needs no context-propagation library at run time.
     */
    public static final String PARENT_KEY = ObservationThreadLocalAccessor.KEY;

    private RdmaObservations() {
    }

    /**
     * A recorder that observes the connects and accepts of the connections it records for, with the default
     * convention.
     *
     * @param registry where the observations go; {@link ObservationRegistry#NOOP} observes nothing
     * @param delegate what the connections record to as well, e.g. a {@link MicrometerRdmaRecorder}, or
     *                 {@link RdmaRecorder#NOOP}
     * @return the recorder to set with {@code ConnectionOptions.Builder.recorder}
     */
    public static RdmaRecorder recorder(ObservationRegistry registry, RdmaRecorder delegate) {
        return recorder(registry, null, delegate);
    }

    /**
     * A recorder that observes the connects and accepts of the connections it records for.
     *
     * @param registry where the observations go; {@link ObservationRegistry#NOOP} observes nothing
     * @param convention names and keys; {@code null}: the registry's global convention for the context, else
     *                   {@link DefaultRdmaObservationConvention}
     * @param delegate what the connections record to as well
     * @return the recorder to set with {@code ConnectionOptions.Builder.recorder}
     */
    public static RdmaRecorder recorder(ObservationRegistry registry, RdmaObservationConvention convention,
                                        RdmaRecorder delegate) {
        return new ObservingRecorder(registry, convention, delegate);
    }

    /**
     * {@link RdmaConnection#connect(InetSocketAddress, ConnectionOptions)}, observed as {@code rdmaflux.connect}
     * from subscription to its result or cancel (failures before the connection attempt begins included,
     * such as loops that cannot start), under the observation in the subscriber's context. Options whose
     * recorder observes already ({@link #recorder}) are used as they are, so the connect is observed once.
     *
     * @param registry where the observation goes; {@link ObservationRegistry#NOOP} observes nothing
     * @param remote the server's address
     * @param options the connection's options; their recorder records as well
     * @return the connection, as {@code RdmaConnection.connect} returns it
     */
    public static Mono<RdmaConnection> connect(ObservationRegistry registry, InetSocketAddress remote,
                                               ConnectionOptions options) {
        Objects.requireNonNull(registry, "registry");
        Mono<RdmaConnection> connect = Mono.defer(() -> RdmaConnection.connect(remote, options));
        if (options.recorder() instanceof ObservingRecorder) {
            return connect;
        }
        return observed(RdmaObservationContext.Kind.CONNECT, remote, null, null, registry, connect);
    }

    /**
     * Observes one operation as {@code rdmaflux.operation} ({@code op}, {@code outcome}, {@code error},
     * {@code remote}), from subscription to its result or cancel, under the observation in the subscriber's
     * context; downstream of it, the operation's own context carries it as the parent. For example
     * {@code connection.write(local, remote).transform(RdmaObservations.operation(registry, "write", connection))}.
     *
     * @param registry where the observation goes; {@link ObservationRegistry#NOOP} observes nothing
     * @param op the operation's name, in the vocabulary of the {@code op} tag ({@code send}, {@code write},
     *           {@code write_imm}, {@code read}, {@code cas}, {@code faa}) or the application's own
     * @param connection the connection it runs on (its remote address is the {@code remote} key)
     * @param <T> what the operation emits
     * @return the transformation
     */
    public static <T> Function<Mono<T>, Mono<T>> operation(ObservationRegistry registry, String op,
                                                           RdmaConnection connection) {
        return operation(registry, null, op, connection.remoteAddress());
    }

    /**
     * {@link #operation(ObservationRegistry, String, RdmaConnection)} with a convention and a known peer.
     *
     * @param registry where the observation goes; {@link ObservationRegistry#NOOP} observes nothing
     * @param convention names and keys; {@code null}: the registry's global convention, else the default
     * @param op the operation's name
     * @param remote the peer's address, or {@code null}
     * @param <T> what the operation emits
     * @return the transformation
     */
    public static <T> Function<Mono<T>, Mono<T>> operation(ObservationRegistry registry,
                                                           RdmaObservationConvention convention, String op,
                                                           InetSocketAddress remote) {
        Objects.requireNonNull(registry, "registry");
        Objects.requireNonNull(op, "op");
        return source -> observed(RdmaObservationContext.Kind.OPERATION, remote, op, convention, registry, source);
    }

    /** {@code source} observed once per subscription, from subscription to its first signal or cancel. */
    private static <T> Mono<T> observed(RdmaObservationContext.Kind kind, InetSocketAddress remote, String op,
                                        RdmaObservationConvention convention, ObservationRegistry registry,
                                        Mono<T> source) {
        return Mono.deferContextual(context -> {
            if (registry.isNoop()) {
                return source;
            }
            Observation o = observation(kind, remote, op, convention, registry, parentOf(context, registry)).start();
            AtomicBoolean ended = new AtomicBoolean();
            return source
                    .doOnSuccess(v -> {
                        if (ended.compareAndSet(false, true)) {
                            stop(o, RdmaTags.SUCCESS, null);
                        }
                    })
                    .doOnError(e -> {
                        if (ended.compareAndSet(false, true)) {
                            stop(o, RdmaTags.FAILURE, e);
                        }
                    })
                    .doOnCancel(() -> {
                        if (ended.compareAndSet(false, true)) {
                            stop(o, RdmaTags.CANCELLED, null);
                        }
                    })
                    // Upstream of here (the operation itself, what it subscribes to) sees this one as the parent.
                    .contextWrite(c -> c.put(PARENT_KEY, o));
        });
    }

    // ---------------------------------------------------------------- shared with ObservingRecorder

    /**
     * The parent: the observation under {@link #PARENT_KEY}, else, with a registry, its current one.
     *
     * @param context the subscriber's context
     * @param current the registry whose current observation is the fallback, or {@code null} for none
     */
    static Observation parentOf(ContextView context, ObservationRegistry current) {
        Object p = context.getOrDefault(PARENT_KEY, null);
        if (p instanceof Observation o) {
            return o;
        }
        return current == null ? null : current.getCurrentObservation();
    }

    /**
     * An observation of {@code kind}, not started, whose parent is {@code parent}, and none when {@code null}:
     * Micrometer would take the thread's current observation, which on a CM loop belongs to nobody.
     */
    static Observation observation(RdmaObservationContext.Kind kind, InetSocketAddress remote, String op,
                                   RdmaObservationConvention convention, ObservationRegistry registry,
                                   Observation parent) {
        RdmaObservationContext context = new RdmaObservationContext(kind, remote, op);
        Observation o = Observation.createNotStarted(convention, DefaultRdmaObservationConvention.of(kind),
                () -> context, registry);
        o.parentObservation(parent);
        return o;
    }

    /** Ends {@code o}: the outcome and the error first, so the convention's keys at stop see them. */
    static void stop(Observation o, String outcome, Throwable error) {
        if (o.getContext() instanceof RdmaObservationContext c) {
            c.outcome(outcome);
        }
        if (error != null) {
            o.error(error);
        }
        o.stop();
    }
}
