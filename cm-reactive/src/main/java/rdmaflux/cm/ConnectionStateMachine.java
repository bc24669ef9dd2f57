package rdmaflux.cm;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executor;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import rdmaflux.cm.ConnectionState.Closed;
import rdmaflux.cm.ConnectionState.Disconnecting;
import rdmaflux.cm.ConnectionState.Failed;
import rdmaflux.verbs.CmEventType;

/**
 * The typed state machine of one connection, free of native code so it can be driven by synthetic
 * events in tests.
 *
 * <p>Single-threaded: every method is called on the CM event loop (the executor the step timers hop
 * back to). Each step state arms a timer; a timer that fires after its step ended is ignored, so a
 * late timer can never fail a connection that moved on. Events that are illegal in the current state
 * fail the connection with {@link RdmaCmException.IllegalEvent}: continuing would leave native state
 * and ours out of step.
 *
 * <p>Inputs that arrive while a transition is being announced (a listener's action that fails, a
 * {@code states()} subscriber that closes from {@code onNext}) are queued and applied once that
 * transition has reached every subscriber, so everyone sees the states in the order they happened.
 */
final class ConnectionStateMachine {

    /** Which side of the handshake. */
    enum Role {
        CLIENT, SERVER
    }

    /** Told about every transition, on the loop thread, before {@link #states()} subscribers. */
    interface Listener {
        /**
         * @param from the old state
         * @param to the new state
         */
        void onTransition(ConnectionState from, ConnectionState to);
    }

    private final Role role;
    private final Map<Step, Duration> timeouts;
    private final Scheduler timers;
    private final Executor loop;
    private final Listener listener;
    private final Sinks.Many<ConnectionState> states = Sinks.many().replay().latest();
    private ConnectionState state = ConnectionState.IDLE;
    private Disposable timer;
    /** Inputs that arrived while a transition was being announced; applied right after it. */
    private final java.util.ArrayDeque<Runnable> deferred = new java.util.ArrayDeque<>();
    private boolean transitioning;

    ConnectionStateMachine(Role role, Map<Step, Duration> timeouts, Scheduler timers, Executor loop,
                           Listener listener) {
        this.role = role;
        this.timeouts = Map.copyOf(timeouts);
        this.timers = timers;
        this.loop = loop;
        this.listener = listener;
        states.tryEmitNext(state);
    }

    ConnectionState state() {
        return state;
    }

    /** @return the current state, then every change; completes after a terminal state */
    Flux<ConnectionState> states() {
        return states.asFlux();
    }

    /** IDLE → RESOLVING_ADDRESS (client) or ACCEPTING (server). */
    ConnectionState start() {
        if (!(state instanceof ConnectionState.Idle)) {
            throw new IllegalStateException("already started: " + state);
        }
        return moveTo(role == Role.CLIENT ? ConnectionState.RESOLVING_ADDRESS : ConnectionState.ACCEPTING);
    }

    /**
     * Applies a connection manager event.
     *
     * @param type the event
     * @param status its status
     * @param privateData the peer's private data
     * @return the new state
     */
    ConnectionState onEvent(CmEventType type, int status, byte[] privateData) {
        if (transitioning) {
            deferred.add(() -> onEvent(type, status, privateData));
            return state;
        }
        ConnectionState s = state;
        if (s.isTerminal()) {
            // Events racing a local close or cancel (ESTABLISHED after a cancel, TIMEWAIT_EXIT after
            // teardown) are expected here; the native side is already being destroyed.
            return s;
        }
        if (type == CmEventType.ADDR_CHANGE) {
            return s; // informational in every state
        }
        if (type == CmEventType.DEVICE_REMOVAL) {
            return fail(RdmaCmException.of(stepOf(s), type, status, privateData));
        }
        ConnectionState next = switch (s) {
            case ConnectionState.ResolvingAddress r -> switch (type) {
                case ADDR_RESOLVED -> ConnectionState.RESOLVING_ROUTE;
                case ADDR_ERROR -> failed(s, type, status, privateData);
                default -> illegal(s, type);
            };
            case ConnectionState.ResolvingRoute r -> switch (type) {
                case ROUTE_RESOLVED -> ConnectionState.CONNECTING;
                case ROUTE_ERROR, ADDR_ERROR -> failed(s, type, status, privateData);
                default -> illegal(s, type);
            };
            case ConnectionState.Connecting c -> switch (type) {
                case ESTABLISHED -> ConnectionState.ESTABLISHED;
                case REJECTED, UNREACHABLE, CONNECT_ERROR, DISCONNECTED -> failed(s, type, status, privateData);
                default -> illegal(s, type);
            };
            case ConnectionState.Accepting a -> switch (type) {
                case ESTABLISHED -> ConnectionState.ESTABLISHED;
                case REJECTED, UNREACHABLE, CONNECT_ERROR, DISCONNECTED -> failed(s, type, status, privateData);
                default -> illegal(s, type);
            };
            case ConnectionState.Established e -> switch (type) {
                case DISCONNECTED -> new Disconnecting(true);
                default -> illegal(s, type);
            };
            case Disconnecting d -> switch (type) {
                case DISCONNECTED, TIMEWAIT_EXIT -> new Closed(d.remote());
                default -> illegal(s, type);
            };
            default -> illegal(s, type);
        };
        return moveTo(next);
    }

    /** A step timer fired; ignored unless the machine is still in that step. */
    ConnectionState onTimeout(Step step) {
        if (transitioning) {
            deferred.add(() -> onTimeout(step));
            return state;
        }
        if (state.isTerminal() || state.step() != step) {
            return state;
        }
        return moveTo(new Failed(new RdmaCmException.StepTimeout(step, timeouts.get(step)), step));
    }

    /**
     * The application asked to close: an established connection starts disconnecting, one still being
     * set up is cancelled.
     *
     * @return the new state
     */
    ConnectionState close() {
        if (transitioning) {
            deferred.add(() -> close());
            return state;
        }
        ConnectionState s = state;
        if (s.isTerminal() || s instanceof Disconnecting) {
            return s;
        }
        return moveTo(s instanceof ConnectionState.Established ? new Disconnecting(false) : new Closed(false));
    }

    /** The teardown after a remote disconnect finished: DISCONNECTING(remote) → CLOSED. */
    ConnectionState teardownComplete() {
        if (transitioning) {
            deferred.add(() -> teardownComplete());
            return state;
        }
        if (state instanceof Disconnecting d) {
            return moveTo(new Closed(d.remote()));
        }
        return state;
    }

    /**
     * Fails the connection for a reason outside the CM (a failed completion, a native error).
     *
     * @param cause the failure
     * @return the new state
     */
    ConnectionState fail(Throwable cause) {
        if (transitioning) {
            deferred.add(() -> fail(cause));
            return state;
        }
        if (state.isTerminal()) {
            return state;
        }
        return moveTo(new Failed(cause, stepOf(state)));
    }

    /** The step a failure in {@code s} belongs to: before start, the first step of this side. */
    private Step stepOf(ConnectionState s) {
        if (s.step() != null) {
            return s.step();
        }
        return s instanceof ConnectionState.Idle ? (role == Role.CLIENT ? Step.ADDRESS : Step.ACCEPT) : Step.TRANSFER;
    }

    private ConnectionState failed(ConnectionState s, CmEventType type, int status, byte[] privateData) {
        return new Failed(RdmaCmException.of(stepOf(s), type, status, privateData), stepOf(s));
    }

    private ConnectionState illegal(ConnectionState s, CmEventType type) {
        return new Failed(new RdmaCmException.IllegalEvent(stepOf(s), type, s), stepOf(s));
    }

    private ConnectionState moveTo(ConnectionState next) {
        ConnectionState from = state;
        if (next.equals(from)) {
            return from;
        }
        state = next;
        if (timer != null) {
            timer.dispose();
            timer = null;
        }
        Step step = next.step();
        // An established connection has no deadline, whatever the options say.
        Duration d = step == null || step == Step.TRANSFER ? null : timeouts.get(step);
        if (d != null && !next.isTerminal()) {
            timer = timers.schedule(() -> loop.execute(() -> onTimeout(step)), d.toNanos(),
                    java.util.concurrent.TimeUnit.NANOSECONDS);
        }
        transitioning = true;
        try {
            listener.onTransition(from, next);
            states.tryEmitNext(next);
            if (next.isTerminal()) {
                states.tryEmitComplete();
            }
        } finally {
            transitioning = false;
        }
        Runnable r;
        while (!transitioning && (r = deferred.poll()) != null) {
            r.run();
        }
        return state;
    }
}
