package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionState;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;
import rdmaflux.cm.internal.loop.Timers;

import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import rdmaflux.cm.ConnectionState.Closed;
import rdmaflux.cm.ConnectionState.Disconnecting;
import rdmaflux.cm.ConnectionState.Failed;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.Errno;

/**
 * The typed state machine of one connection, free of native code so it can be driven by synthetic
 * events in tests.
 *
 * <p>One direction only: every input ({@link #start}, {@link #onEvent}, {@link #onTimeout}, {@link #close},
 * {@link #teardownComplete}, {@link #fail}) returns the {@link Transition} it caused and the
 * {@link Effect} entering the new state requires; the machine never calls its owner. The owner performs
 * the effect and, if that fails, feeds the failure back as a new input ({@link #fail}). So the machine
 * is never re-entered and needs no queue of deferred inputs.
 *
 * <p>Single-threaded: every method is called on the CM event loop. Each step state arms a timer (on the
 * loop's own timers) whose expiry is handed to the {@code expired} callback, which calls
 * {@link #onTimeout}; a timer that fires after its step ended is ignored, so a late timer can
 * never fail a connection that moved on. One input repeats a step instead of leaving it: an address
 * resolution that timed out in the kernel (ADDR_ERROR, ETIMEDOUT) returns the same state with the
 * step's effect again, and the step's timer keeps running, so the step's deadline stays the bound.
 * Events that are illegal in the current state fail the connection with
 * {@link RdmaCmException.IllegalEvent}: continuing would leave native state and ours out of step.
 * {@link #states()} subscribers are told each new state as the input that caused it returns; they must
 * not feed inputs to the machine synchronously (the owner's inputs go through its loop).
 */
public final class ConnectionStateMachine {

    /** Which side of the handshake. */
    enum Role {
        CLIENT, SERVER
    }

    /** What the owner must do on entering a state. */
    enum Effect {
        /** Nothing: the input changed no state. */
        NONE,
        /** rdma_resolve_addr. */
        RESOLVE_ADDRESS,
        /** rdma_resolve_route. */
        RESOLVE_ROUTE,
        /** Create the queue pair and its resources, then rdma_connect. */
        CONNECT,
        /** Create the queue pair and its resources, then rdma_accept. */
        ACCEPT,
        /** Hand the CQ to its completion loop and the connection to its subscriber. */
        ESTABLISHED,
        /** A local close: send the orderly close (credits protocol) or rdma_disconnect. */
        DISCONNECT,
        /** The peer disconnected: answer with rdma_disconnect and tear down. */
        ANSWER_DISCONNECT,
        /** A terminal state: free everything (idempotent). */
        TEARDOWN;

        /**
         * What entering a state requires.
         *
         * @param to the state entered
         * @return what entering it requires
         */
        static Effect of(ConnectionState to) {
            return switch (to) {
                case ConnectionState.ResolvingAddress r -> RESOLVE_ADDRESS;
                case ConnectionState.ResolvingRoute r -> RESOLVE_ROUTE;
                case ConnectionState.Connecting c -> CONNECT;
                case ConnectionState.Accepting a -> ACCEPT;
                case ConnectionState.Established e -> ESTABLISHED;
                case Disconnecting d -> d.remote() ? ANSWER_DISCONNECT : DISCONNECT;
                case Closed c -> TEARDOWN;
                case Failed f -> TEARDOWN;
                case ConnectionState.Idle i -> NONE;
            };
        }
    }

    /**
     * What an input did.
     *
     * @param from the state before
     * @param to the state after (the same object when nothing changed)
     * @param effect what the owner must do now
     */
    record Transition(ConnectionState from, ConnectionState to, Effect effect) {
        /** {@return whether the state changed} */
        boolean changed() {
            return to != from;
        }

        /** {@return whether the owner has work to do: a new state's effect, or a step's effect again} */
        boolean hasEffect() {
            return effect != Effect.NONE;
        }

        /**
         * The step this transition completed successfully, for its duration: a setup step that led to the
         * next one, or a disconnect that ended in {@link Closed}. {@code null} for a failure, a cancel (a
         * setup step that ended in {@link Closed}), an established connection (which never completes as a
         * step) and no change.
         *
         * @return the step completed, or {@code null}
         */
        Step completedStep() {
            if (!changed() || to instanceof Failed) {
                return null;
            }
            Step step = from.step();
            if (step == null || step == Step.TRANSFER) {
                return null;
            }
            if (to instanceof Closed) {
                // Closed after a disconnect is that step's successful end; closed during setup is a cancel.
                return from instanceof Disconnecting ? Step.DISCONNECT : null;
            }
            return step;
        }
    }

    private final Role role;
    private final Map<Step, Duration> timeouts;
    private final Timers timers;
    private final Consumer<Step> expired;
    private final Sinks.Many<ConnectionState> states = Sinks.many().replay().latest();
    private ConnectionState state = ConnectionState.IDLE;
    private Disposable timer;

    /**
     * A machine in IDLE.
     *
     * @param role the side
     * @param timeouts per-step deadlines; a step without one never times out
     * @param timers where step timers run
     * @param expired told that a step's timer fired; the owner calls {@link #onTimeout} (on the loop)
     */
    ConnectionStateMachine(Role role, Map<Step, Duration> timeouts, Timers timers, Consumer<Step> expired) {
        this.role = role;
        this.timeouts = Map.copyOf(timeouts);
        this.timers = timers;
        this.expired = expired;
        states.tryEmitNext(state);
    }

    ConnectionState state() {
        return state;
    }

    /** {@return the current state, then every change; completes after a terminal state} */
    Flux<ConnectionState> states() {
        return states.asFlux();
    }

    /** IDLE → RESOLVING_ADDRESS (client) or ACCEPTING (server). */
    Transition start() {
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
     * @return the transition
     */
    Transition onEvent(CmEventType type, int status, byte[] privateData) {
        ConnectionState s = state;
        if (s.isTerminal()) {
            // Events racing a local close or cancel (ESTABLISHED after a cancel, TIMEWAIT_EXIT after
            // teardown) are expected here; the native side is already being destroyed.
            return stay();
        }
        if (type == CmEventType.ADDR_CHANGE) {
            return stay(); // informational in every state
        }
        if (type == CmEventType.DEVICE_REMOVAL) {
            return moveTo(new Failed(RdmaCmException.of(stepOf(s), type, status, privateData), stepOf(s)));
        }
        if (s instanceof ConnectionState.ResolvingAddress && type == CmEventType.ADDR_ERROR
                && status == -Errno.ETIMEDOUT) {
            // The kernel gave up on this attempt's neighbour resolution (lost ARP probes): its request
            // would not have probed again before its own deadline. The step's deadline is ours and still
            // runs: resolve again, which probes afresh, until the step's timer fires.
            return new Transition(s, s, Effect.RESOLVE_ADDRESS);
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
                // The kernel delivers these to an established id too: a reject from the peer's connection
                // manager (the REJ of a peer whose REP timed out before our RTU reached it, or one for a stale
                // connection), and the late error of a setup message. The queue pair is already in error.
                case REJECTED, UNREACHABLE, CONNECT_ERROR -> failed(s, type, status, privateData);
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

    /**
     * A step timer fired; ignored unless the machine is still in that step.
     *
     * @param step the step whose timer fired
     * @return the transition
     */
    Transition onTimeout(Step step) {
        if (state.isTerminal() || state.step() != step) {
            return stay();
        }
        return moveTo(new Failed(new RdmaCmException.StepTimeout(step, timeouts.get(step)), step));
    }

    /**
     * The application asked to close: an established connection starts disconnecting, one still being
     * set up is cancelled.
     *
     * @return the transition
     */
    Transition close() {
        ConnectionState s = state;
        if (s.isTerminal() || s instanceof Disconnecting) {
            return stay();
        }
        return moveTo(s instanceof ConnectionState.Established ? new Disconnecting(false) : new Closed(false));
    }

    /**
     * The teardown after a disconnect finished: DISCONNECTING → CLOSED.
     *
     * @return the transition
     */
    Transition teardownComplete() {
        if (state instanceof Disconnecting d) {
            return moveTo(new Closed(d.remote()));
        }
        return stay();
    }

    /**
     * Fails the connection for a reason outside the CM (a failed completion, a native error, an effect
     * that threw).
     *
     * @param cause the failure
     * @return the transition
     */
    Transition fail(Throwable cause) {
        if (state.isTerminal()) {
            return stay();
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

    private Transition stay() {
        return new Transition(state, state, Effect.NONE);
    }

    private Transition moveTo(ConnectionState next) {
        ConnectionState from = state;
        if (next.equals(from)) {
            return stay();
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
            timer = timers.schedule(() -> expired.accept(step), d.toNanos());
        }
        states.tryEmitNext(next);
        if (next.isTerminal()) {
            states.tryEmitComplete();
        }
        return new Transition(from, next, Effect.of(next));
    }
}
