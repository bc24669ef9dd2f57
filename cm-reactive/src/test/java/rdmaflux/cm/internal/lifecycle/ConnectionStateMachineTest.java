package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionState;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import rdmaflux.cm.ConnectionState.Closed;
import rdmaflux.cm.ConnectionState.Disconnecting;
import rdmaflux.cm.ConnectionState.Failed;
import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Role;
import rdmaflux.verbs.CmEventType;

class ConnectionStateMachineTest {

    // Pairwise distinct, so a timer armed with another step's duration cannot pass a boundary test.
    private static final Duration ADDRESS = Duration.ofMillis(2_000);
    private static final Duration ROUTE = Duration.ofMillis(3_000);
    private static final Duration CONNECT = Duration.ofMillis(5_000);
    private static final Duration ACCEPT = Duration.ofMillis(7_000);
    private static final Duration DISCONNECT = Duration.ofMillis(11_000);
    private static final Map<Step, Duration> TIMEOUTS = Map.of(Step.ADDRESS, ADDRESS, Step.ROUTE, ROUTE,
            Step.CONNECT, CONNECT, Step.ACCEPT, ACCEPT, Step.DISCONNECT, DISCONNECT);
    private static final Duration MS = Duration.ofMillis(1);
    private static final Duration LONG_AFTER = Duration.ofHours(1);
    private static final Duration VERIFY = Duration.ofSeconds(5);
    private static final byte[] NONE = new byte[0];
    private static final int ETIMEDOUT = -110;
    private static final int EHOSTUNREACH = -113;

    record Transition(ConnectionState from, ConnectionState to) {
    }

    /** Every state an event can arrive in while the connection is alive, with how to get there. */
    enum Live {
        IDLE(ConnectionState.IDLE, null),
        RESOLVING_ADDRESS(ConnectionState.RESOLVING_ADDRESS, ADDRESS),
        RESOLVING_ROUTE(ConnectionState.RESOLVING_ROUTE, ROUTE),
        CONNECTING(ConnectionState.CONNECTING, CONNECT),
        ACCEPTING(ConnectionState.ACCEPTING, ACCEPT),
        ESTABLISHED(ConnectionState.ESTABLISHED, null),
        DISCONNECTING_REMOTE(new Disconnecting(true), DISCONNECT),
        DISCONNECTING_LOCAL(new Disconnecting(false), DISCONNECT);

        final ConnectionState state;
        final Duration timeout;

        Live(ConnectionState state, Duration timeout) {
            this.state = state;
            this.timeout = timeout;
        }

        /** The step a failure in this state is attributed to: before start, the side's first step. */
        Step failedStep() {
            return this == IDLE ? Step.ADDRESS : state.step();
        }
    }

    /** What an event does in a live state, written down independently of the machine's switch. */
    record Expected(ConnectionState next, Class<? extends RdmaCmException> failure) {
        static Expected to(ConnectionState s) {
            return new Expected(s, null);
        }

        static Expected fails(Class<? extends RdmaCmException> c) {
            return new Expected(null, c);
        }
    }

    private final VirtualTimeScheduler time = VirtualTimeScheduler.create();
    private final List<Transition> transitions = new ArrayList<>();

    @AfterEach
    void disposeTime() {
        time.dispose();
    }

    private Sm machine(Role role) {
        return machine(role, TIMEOUTS);
    }

    private Sm machine(Role role, Map<Step, Duration> timeouts) {
        return new Sm(role, timeouts, Runnable::run);
    }

    /**
     * Drives the machine the way Connection does: performs nothing, but records every transition an
     * input returned and hands step timers to {@code loop}, which calls {@link #onTimeout} later.
     */
    private final class Sm {
        final ConnectionStateMachine machine;
        final List<ConnectionStateMachine.Transition> returned = new ArrayList<>();

        Sm(Role role, Map<Step, Duration> timeouts, java.util.concurrent.Executor loop) {
            Sm self = this;
            this.machine = new ConnectionStateMachine(role, timeouts,
                    (task, nanos) -> time.schedule(task, nanos, java.util.concurrent.TimeUnit.NANOSECONDS),
                    step -> loop.execute(() -> self.onTimeout(step)));
        }

        private ConnectionState record(ConnectionStateMachine.Transition t) {
            returned.add(t);
            if (t.changed()) {
                transitions.add(new Transition(t.from(), t.to()));
            }
            return t.to();
        }

        ConnectionState state() {
            return machine.state();
        }

        reactor.core.publisher.Flux<ConnectionState> states() {
            return machine.states();
        }

        ConnectionState start() {
            return record(machine.start());
        }

        ConnectionState onEvent(CmEventType type, int status, byte[] data) {
            return record(machine.onEvent(type, status, data));
        }

        ConnectionState onTimeout(Step step) {
            return record(machine.onTimeout(step));
        }

        ConnectionState close() {
            return record(machine.close());
        }

        ConnectionState teardownComplete() {
            return record(machine.teardownComplete());
        }

        ConnectionState fail(Throwable cause) {
            return record(machine.fail(cause));
        }

        ConnectionStateMachine.Transition last() {
            return returned.getLast();
        }
    }

    /** A fresh machine driven into {@code l} at virtual time 0, with the transition log cleared. */
    private Sm at(Live l) {
        Sm sm = machine(l == Live.ACCEPTING ? Role.SERVER : Role.CLIENT);
        switch (l) {
            case IDLE -> { }
            case ACCEPTING -> sm.start();
            case RESOLVING_ADDRESS -> sm.start();
            case RESOLVING_ROUTE -> {
                sm.start();
                sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
            }
            case CONNECTING, ESTABLISHED, DISCONNECTING_REMOTE, DISCONNECTING_LOCAL -> {
                sm.start();
                sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
                sm.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE);
                if (l != Live.CONNECTING) {
                    sm.onEvent(CmEventType.ESTABLISHED, 0, NONE);
                }
                if (l == Live.DISCONNECTING_REMOTE) {
                    sm.onEvent(CmEventType.DISCONNECTED, 0, NONE);
                } else if (l == Live.DISCONNECTING_LOCAL) {
                    sm.close();
                }
            }
        }
        assertEquals(l.state, sm.state(), "setup");
        transitions.clear();
        return sm;
    }

    private static Expected expected(Live l, CmEventType e) {
        if (e == CmEventType.ADDR_CHANGE) {
            return Expected.to(l.state);
        }
        if (e == CmEventType.DEVICE_REMOVAL) {
            return Expected.fails(RdmaCmException.DeviceRemoved.class);
        }
        Expected illegal = Expected.fails(RdmaCmException.IllegalEvent.class);
        return switch (l) {
            case IDLE -> illegal;
            case RESOLVING_ADDRESS -> switch (e) {
                case ADDR_RESOLVED -> Expected.to(ConnectionState.RESOLVING_ROUTE);
                // The table's status is ETIMEDOUT: the kernel's attempt ended, the step goes on (resolves again).
                case ADDR_ERROR -> Expected.to(ConnectionState.RESOLVING_ADDRESS);
                default -> illegal;
            };
            case RESOLVING_ROUTE -> switch (e) {
                case ROUTE_RESOLVED -> Expected.to(ConnectionState.CONNECTING);
                case ROUTE_ERROR -> Expected.fails(RdmaCmException.RouteError.class);
                case ADDR_ERROR -> Expected.fails(RdmaCmException.AddressError.class);
                default -> illegal;
            };
            case CONNECTING, ACCEPTING -> switch (e) {
                case ESTABLISHED -> Expected.to(ConnectionState.ESTABLISHED);
                case REJECTED -> Expected.fails(RdmaCmException.Rejected.class);
                case UNREACHABLE -> Expected.fails(RdmaCmException.Unreachable.class);
                case CONNECT_ERROR -> Expected.fails(RdmaCmException.ConnectError.class);
                case DISCONNECTED -> Expected.fails(RdmaCmException.Disconnected.class);
                default -> illegal;
            };
            case ESTABLISHED -> switch (e) {
                case DISCONNECTED -> Expected.to(new Disconnecting(true));
                case REJECTED -> Expected.fails(RdmaCmException.Rejected.class);
                case UNREACHABLE -> Expected.fails(RdmaCmException.Unreachable.class);
                case CONNECT_ERROR -> Expected.fails(RdmaCmException.ConnectError.class);
                default -> illegal;
            };
            case DISCONNECTING_REMOTE -> e == CmEventType.DISCONNECTED || e == CmEventType.TIMEWAIT_EXIT
                    ? Expected.to(new Closed(true)) : illegal;
            case DISCONNECTING_LOCAL -> e == CmEventType.DISCONNECTED || e == CmEventType.TIMEWAIT_EXIT
                    ? Expected.to(new Closed(false)) : illegal;
        };
    }

    static Stream<Arguments> liveStatesTimesEvents() {
        return Stream.of(Live.values()).flatMap(l -> Stream.of(CmEventType.values()).map(e -> Arguments.of(l, e)));
    }

    private static int statusFor(CmEventType e) {
        return e == CmEventType.REJECTED ? RdmaCmException.Rejected.CONSUMER_REJECT : ETIMEDOUT;
    }

    // ---------------------------------------------------------------- transitions

    @Test
    void clientHappyPathWithRemoteDisconnect() {
        Sm sm = machine(Role.CLIENT);
        assertEquals(ConnectionState.IDLE, sm.state());
        assertEquals(ConnectionState.RESOLVING_ADDRESS, sm.start());
        assertEquals(ConnectionState.RESOLVING_ROUTE, sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE));
        assertEquals(ConnectionState.CONNECTING, sm.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE));
        assertEquals(ConnectionState.ESTABLISHED, sm.onEvent(CmEventType.ESTABLISHED, 0, NONE));
        assertEquals(new Disconnecting(true), sm.onEvent(CmEventType.DISCONNECTED, 0, NONE));
        assertEquals(new Closed(true), sm.teardownComplete());
        assertEquals(new Closed(true), sm.state());
        assertEquals(List.of(
                new Transition(ConnectionState.IDLE, ConnectionState.RESOLVING_ADDRESS),
                new Transition(ConnectionState.RESOLVING_ADDRESS, ConnectionState.RESOLVING_ROUTE),
                new Transition(ConnectionState.RESOLVING_ROUTE, ConnectionState.CONNECTING),
                new Transition(ConnectionState.CONNECTING, ConnectionState.ESTABLISHED),
                new Transition(ConnectionState.ESTABLISHED, new Disconnecting(true)),
                new Transition(new Disconnecting(true), new Closed(true))), transitions);
    }

    @Test
    void localCloseOfEstablishedWaitsForDisconnected() {
        Sm sm = at(Live.ESTABLISHED);
        assertEquals(new Disconnecting(false), sm.close());
        assertEquals(new Closed(false), sm.onEvent(CmEventType.DISCONNECTED, 0, NONE));
        assertEquals(List.of(
                new Transition(ConnectionState.ESTABLISHED, new Disconnecting(false)),
                new Transition(new Disconnecting(false), new Closed(false))), transitions);
    }

    @ParameterizedTest
    @EnumSource(value = Live.class, names = {"DISCONNECTING_REMOTE", "DISCONNECTING_LOCAL"})
    void timewaitExitWhileDisconnectingCloses(Live l) {
        Sm sm = at(l);
        boolean remote = ((Disconnecting) l.state).remote();
        assertEquals(new Closed(remote), sm.onEvent(CmEventType.TIMEWAIT_EXIT, 0, NONE));
        assertEquals(List.of(new Transition(l.state, new Closed(remote))), transitions);
    }

    @Test
    void serverPathAcceptsThenEstablishes() {
        Sm sm = machine(Role.SERVER);
        assertEquals(ConnectionState.ACCEPTING, sm.start());
        assertEquals(ConnectionState.ESTABLISHED, sm.onEvent(CmEventType.ESTABLISHED, 0, NONE));
        assertEquals(new Disconnecting(true), sm.onEvent(CmEventType.DISCONNECTED, 0, NONE));
        assertEquals(new Closed(true), sm.onEvent(CmEventType.TIMEWAIT_EXIT, 0, NONE));
        assertEquals(List.of(
                new Transition(ConnectionState.IDLE, ConnectionState.ACCEPTING),
                new Transition(ConnectionState.ACCEPTING, ConnectionState.ESTABLISHED),
                new Transition(ConnectionState.ESTABLISHED, new Disconnecting(true)),
                new Transition(new Disconnecting(true), new Closed(true))), transitions);
    }

    @ParameterizedTest
    @EnumSource(Live.class)
    void closeCancelsSetupDisconnectsEstablishedAndIsIdempotentWhileDisconnecting(Live l) {
        Sm sm = at(l);
        ConnectionState expected = switch (l) {
            case ESTABLISHED -> new Disconnecting(false);
            case DISCONNECTING_LOCAL, DISCONNECTING_REMOTE -> l.state;
            default -> new Closed(false);
        };
        assertEquals(expected, sm.close());
        assertEquals(expected, sm.state());
        assertEquals(expected.equals(l.state) ? List.of() : List.of(new Transition(l.state, expected)), transitions);
    }

    @ParameterizedTest
    @EnumSource(Live.class)
    void teardownCompleteOnlyClosesADisconnectingConnection(Live l) {
        Sm sm = at(l);
        ConnectionState expected = l.state instanceof Disconnecting d ? new Closed(d.remote()) : l.state;
        assertEquals(expected, sm.teardownComplete());
        assertEquals(expected.equals(l.state) ? List.of() : List.of(new Transition(l.state, expected)), transitions);
    }

    // ---------------------------------------------------------------- every event in every live state

    @ParameterizedTest(name = "{1} in {0}")
    @MethodSource("liveStatesTimesEvents")
    void everyEventInEveryLiveStateMatchesTheTable(Live l, CmEventType e) {
        Sm sm = at(l);
        int status = statusFor(e);
        ConnectionState returned = sm.onEvent(e, status, NONE);
        assertSame(sm.state(), returned);
        Expected x = expected(l, e);
        if (x.failure() == null) {
            assertEquals(x.next(), sm.state());
            assertEquals(x.next().equals(l.state) ? List.of() : List.of(new Transition(l.state, x.next())),
                    transitions);
            return;
        }
        Failed f = assertInstanceOf(Failed.class, sm.state());
        assertEquals(x.failure(), f.cause().getClass());
        RdmaCmException ex = (RdmaCmException) f.cause();
        assertEquals(l.failedStep(), f.step());
        assertEquals(l.failedStep(), ex.step());
        assertEquals(e, ex.event());
        if (ex instanceof RdmaCmException.IllegalEvent) {
            // The report must let someone find the defect: which event, in which state.
            assertTrue(ex.getMessage().contains(e.name()), ex.getMessage());
            assertTrue(ex.getMessage().contains(l.state.toString()), ex.getMessage());
        } else if (!(ex instanceof RdmaCmException.Disconnected)) {
            assertEquals(status, ex.status());
        }
        assertEquals(List.of(new Transition(l.state, f)), transitions);
    }

    @ParameterizedTest
    @EnumSource(Live.class)
    void addrChangeIsIgnoredAndDoesNotRestartTheStepTimer(Live l) {
        Sm sm = at(l);
        Duration half = l.timeout == null ? Duration.ofSeconds(1) : l.timeout.dividedBy(2);
        time.advanceTimeBy(half);
        ConnectionState before = sm.state();
        assertSame(before, sm.onEvent(CmEventType.ADDR_CHANGE, 0, NONE));
        assertEquals(List.of(), transitions);
        if (l.timeout != null) {
            // Still the original deadline: a flapping address must not keep a stuck step alive.
            time.advanceTimeBy(l.timeout.minus(half));
            Failed f = assertInstanceOf(Failed.class, sm.state());
            assertInstanceOf(RdmaCmException.StepTimeout.class, f.cause());
        } else {
            assertEquals(l.state, sm.state());
        }
    }

    @ParameterizedTest
    @EnumSource(Live.class)
    void deviceRemovalFailsEveryLiveStateWithItsStepAndStatus(Live l) {
        Sm sm = at(l);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(CmEventType.DEVICE_REMOVAL, -19, NONE));
        RdmaCmException.DeviceRemoved ex = assertInstanceOf(RdmaCmException.DeviceRemoved.class, f.cause());
        assertEquals(l.failedStep(), f.step());
        assertEquals(l.failedStep(), ex.step());
        assertEquals(-19, ex.status());
        assertEquals(CmEventType.DEVICE_REMOVAL, ex.event());
    }

    @Test
    void addressErrorCarriesStepStatusAndErrnoName() {
        Sm sm = at(Live.RESOLVING_ADDRESS);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(CmEventType.ADDR_ERROR, EHOSTUNREACH, NONE));
        RdmaCmException.AddressError ex = assertInstanceOf(RdmaCmException.AddressError.class, f.cause());
        assertEquals(Step.ADDRESS, f.step());
        assertEquals(Step.ADDRESS, ex.step());
        assertEquals(EHOSTUNREACH, ex.status());
        assertTrue(ex.getMessage().contains("EHOSTUNREACH"), ex.getMessage());
    }

    @Test
    void aTimedOutAddressAttemptResolvesAgainUntilTheStepsOwnDeadline() {
        Sm sm = at(Live.RESOLVING_ADDRESS);
        time.advanceTimeBy(ADDRESS.minusMillis(500));
        assertSame(ConnectionState.RESOLVING_ADDRESS, sm.onEvent(CmEventType.ADDR_ERROR, ETIMEDOUT, NONE));
        assertEquals(ConnectionStateMachine.Effect.RESOLVE_ADDRESS, sm.last().effect());
        assertEquals(List.of(), transitions, "no state change is reported for a repeated step");
        // The retry armed no timer of its own: the step fails at its first deadline, not 500 ms after it.
        time.advanceTimeBy(Duration.ofMillis(499));
        assertEquals(ConnectionState.RESOLVING_ADDRESS, sm.state());
        time.advanceTimeBy(MS);
        Failed f = assertInstanceOf(Failed.class, sm.state());
        assertInstanceOf(RdmaCmException.StepTimeout.class, f.cause());
        assertEquals(Step.ADDRESS, f.step());
    }

    @Test
    void aTimedOutAddressResolutionFailsTheRouteStep() {
        // Only the address step repeats: the same status during route resolution ends that step.
        Sm sm = at(Live.RESOLVING_ROUTE);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(CmEventType.ADDR_ERROR, ETIMEDOUT, NONE));
        assertEquals(Step.ROUTE, f.step());
    }

    @Test
    void routeErrorFailsTheRouteStep() {
        Sm sm = at(Live.RESOLVING_ROUTE);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(CmEventType.ROUTE_ERROR, -113, NONE));
        RdmaCmException.RouteError ex = assertInstanceOf(RdmaCmException.RouteError.class, f.cause());
        assertEquals(Step.ROUTE, ex.step());
        assertEquals(-113, ex.status());
    }

    @ParameterizedTest
    @EnumSource(value = Live.class, names = {"CONNECTING", "ACCEPTING", "ESTABLISHED"})
    void rejectionKeepsReasonAndACopyOfThePrivateData(Live l) {
        Sm sm = at(l);
        byte[] data = {1, 2, 3};
        Failed f = assertInstanceOf(Failed.class,
                sm.onEvent(CmEventType.REJECTED, RdmaCmException.Rejected.INVALID_SERVICE_ID, data));
        RdmaCmException.Rejected ex = assertInstanceOf(RdmaCmException.Rejected.class, f.cause());
        // The native event buffer is reused by the next rdma_get_cm_event, so the data must be copied.
        data[0] = 99;
        assertEquals(l == Live.ESTABLISHED ? Step.TRANSFER : l.state.step(), ex.step());
        assertEquals(RdmaCmException.Rejected.INVALID_SERVICE_ID, ex.reason());
        assertArrayEquals(new byte[] {1, 2, 3}, ex.privateData());
    }

    @ParameterizedTest
    @EnumSource(value = CmEventType.class, names = {"CONNECT_ERROR", "UNREACHABLE", "DISCONNECTED"})
    void connectFailuresFailTheConnectStep(CmEventType e) {
        Sm sm = at(Live.CONNECTING);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(e, ETIMEDOUT, NONE));
        RdmaCmException ex = assertInstanceOf(RdmaCmException.class, f.cause());
        assertEquals(Step.CONNECT, ex.step());
        assertEquals(e, ex.event());
        assertEquals(switch (e) {
            case CONNECT_ERROR -> RdmaCmException.ConnectError.class;
            case UNREACHABLE -> RdmaCmException.Unreachable.class;
            default -> RdmaCmException.Disconnected.class;
        }, ex.getClass());
    }

    @Test
    void timewaitExitWhileEstablishedIsIllegal() {
        Sm sm = at(Live.ESTABLISHED);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(CmEventType.TIMEWAIT_EXIT, 0, NONE));
        RdmaCmException.IllegalEvent ex = assertInstanceOf(RdmaCmException.IllegalEvent.class, f.cause());
        assertEquals(Step.TRANSFER, f.step());
        assertEquals(CmEventType.TIMEWAIT_EXIT, ex.event());
    }

    @Test
    void establishedWhileResolvingAddressIsIllegalAndNamesEventAndState() {
        Sm sm = at(Live.RESOLVING_ADDRESS);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(CmEventType.ESTABLISHED, 0, NONE));
        RdmaCmException.IllegalEvent ex = assertInstanceOf(RdmaCmException.IllegalEvent.class, f.cause());
        assertEquals(Step.ADDRESS, f.step());
        assertEquals(Step.ADDRESS, ex.step());
        assertTrue(ex.getMessage().contains("ESTABLISHED"), ex.getMessage());
        assertTrue(ex.getMessage().contains("ResolvingAddress"), ex.getMessage());
    }

    @ParameterizedTest(name = "{1} in {0}")
    @MethodSource("listenerAndMulticastEventsInLiveStates")
    void listenerAndMulticastEventsAreIllegalOnAConnection(Live l, CmEventType e) {
        Sm sm = at(l);
        Failed f = assertInstanceOf(Failed.class, sm.onEvent(e, 0, NONE));
        RdmaCmException.IllegalEvent ex = assertInstanceOf(RdmaCmException.IllegalEvent.class, f.cause());
        assertEquals(e, ex.event());
    }

    static Stream<Arguments> listenerAndMulticastEventsInLiveStates() {
        return Stream.of(Live.values()).flatMap(l -> Stream.of(CmEventType.CONNECT_REQUEST,
                CmEventType.MULTICAST_JOIN, CmEventType.MULTICAST_ERROR).map(e -> Arguments.of(l, e)));
    }

    // ---------------------------------------------------------------- terminal states

    enum Terminal {
        CLOSED_REMOTE, CLOSED_CANCELLED, CLOSED_LOCAL, FAILED_EVENT, FAILED_TIMEOUT
    }

    private Sm terminal(Terminal t) {
        Sm sm;
        switch (t) {
            case CLOSED_REMOTE -> {
                sm = at(Live.DISCONNECTING_REMOTE);
                sm.teardownComplete();
            }
            case CLOSED_CANCELLED -> {
                sm = at(Live.CONNECTING);
                sm.close();
            }
            case CLOSED_LOCAL -> {
                sm = at(Live.DISCONNECTING_LOCAL);
                sm.onEvent(CmEventType.DISCONNECTED, 0, NONE);
            }
            case FAILED_EVENT -> {
                sm = at(Live.RESOLVING_ROUTE);
                sm.onEvent(CmEventType.ROUTE_ERROR, ETIMEDOUT, NONE);
            }
            default -> {
                sm = at(Live.ACCEPTING);
                time.advanceTimeBy(ACCEPT);
            }
        }
        assertTrue(sm.state().isTerminal(), "setup");
        transitions.clear();
        return sm;
    }

    static Stream<Arguments> terminalStatesTimesEvents() {
        return Stream.of(Terminal.values())
                .flatMap(t -> Stream.of(CmEventType.values()).map(e -> Arguments.of(t, e)));
    }

    @ParameterizedTest(name = "{1} in {0}")
    @MethodSource("terminalStatesTimesEvents")
    void lateEventsInTerminalStatesAreAbsorbed(Terminal t, CmEventType e) {
        Sm sm = terminal(t);
        ConnectionState end = sm.state();
        assertSame(end, sm.onEvent(e, statusFor(e), NONE));
        assertSame(end, sm.state());
        assertEquals(List.of(), transitions);
    }

    @ParameterizedTest
    @EnumSource(Terminal.class)
    void terminalStatesIgnoreEveryCommand(Terminal t) {
        Sm sm = terminal(t);
        ConnectionState end = sm.state();
        assertSame(end, sm.close());
        assertSame(end, sm.teardownComplete());
        assertSame(end, sm.fail(new IllegalStateException("late")));
        for (Step s : Step.values()) {
            assertSame(end, sm.onTimeout(s));
        }
        assertThrows(IllegalStateException.class, sm::start);
        time.advanceTimeBy(LONG_AFTER);
        assertSame(end, sm.state());
        assertEquals(List.of(), transitions);
        StepVerifier.create(sm.states()).expectNext(end).expectComplete().verify(VERIFY);
    }

    // ---------------------------------------------------------------- timeouts

    @ParameterizedTest
    @EnumSource(value = Live.class, names = {"RESOLVING_ADDRESS", "RESOLVING_ROUTE", "CONNECTING", "ACCEPTING",
            "DISCONNECTING_REMOTE", "DISCONNECTING_LOCAL"})
    void eachStepTimesOutAfterExactlyItsDuration(Live l) {
        Sm sm = at(l);
        Step step = l.state.step();
        assertEquals(TIMEOUTS.get(step), l.timeout, "setup");

        time.advanceTimeBy(l.timeout.minus(MS));
        assertEquals(l.state, sm.state());
        assertEquals(List.of(), transitions);

        time.advanceTimeBy(MS);
        Failed f = assertInstanceOf(Failed.class, sm.state());
        RdmaCmException.StepTimeout ex = assertInstanceOf(RdmaCmException.StepTimeout.class, f.cause());
        assertEquals(step, f.step());
        assertEquals(step, ex.step());
        assertNull(ex.event());
        assertTrue(ex.getMessage().contains(l.timeout.toString()), ex.getMessage());
        assertEquals(List.of(new Transition(l.state, f)), transitions);

        time.advanceTimeBy(LONG_AFTER);
        assertSame(f, sm.state());
        assertEquals(1, transitions.size());
    }

    @Test
    void clientTimersStartWithTheirStepAndDieWithIt() {
        Sm sm = machine(Role.CLIENT);
        sm.start();
        time.advanceTimeBy(ADDRESS.dividedBy(2));
        sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
        // Past the address deadline, which must no longer apply.
        time.advanceTimeBy(ADDRESS);
        assertEquals(ConnectionState.RESOLVING_ROUTE, sm.state());
        time.advanceTimeBy(ROUTE.minus(ADDRESS).minus(MS));
        assertEquals(ConnectionState.RESOLVING_ROUTE, sm.state());
        time.advanceTimeBy(MS);
        Failed f = assertInstanceOf(Failed.class, sm.state());
        assertEquals(Step.ROUTE, f.step());
    }

    @Test
    void aStepEndingJustBeforeItsDeadlineLeavesTheNextStepItsFullTime() {
        Sm sm = machine(Role.CLIENT);
        sm.start();
        time.advanceTimeBy(ADDRESS.minus(MS));
        sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
        time.advanceTimeBy(ROUTE.minus(MS));
        sm.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE);
        time.advanceTimeBy(CONNECT.minus(MS));
        assertEquals(ConnectionState.CONNECTING, sm.state());
        sm.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        // Established has no step timer: an idle connection lives forever.
        time.advanceTimeBy(Duration.ofDays(30));
        assertEquals(ConnectionState.ESTABLISHED, sm.state());
        sm.onEvent(CmEventType.DISCONNECTED, 0, NONE);
        time.advanceTimeBy(DISCONNECT.minus(MS));
        assertEquals(new Closed(true), sm.teardownComplete());
        time.advanceTimeBy(LONG_AFTER);
        assertEquals(new Closed(true), sm.state());
        assertEquals(6, transitions.size());
    }

    @Test
    void acceptTimerDoesNotFireIntoEstablished() {
        Sm sm = at(Live.ACCEPTING);
        time.advanceTimeBy(ACCEPT.dividedBy(2));
        sm.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        time.advanceTimeBy(ACCEPT);
        assertEquals(ConnectionState.ESTABLISHED, sm.state());
        assertEquals(List.of(new Transition(ConnectionState.ACCEPTING, ConnectionState.ESTABLISHED)), transitions);
    }

    @Test
    void cancelledConnectDoesNotTimeOutAfterwards() {
        Sm sm = at(Live.CONNECTING);
        time.advanceTimeBy(CONNECT.dividedBy(2));
        sm.close();
        time.advanceTimeBy(CONNECT);
        assertEquals(new Closed(false), sm.state());
        assertEquals(List.of(new Transition(ConnectionState.CONNECTING, new Closed(false))), transitions);
    }

    @Test
    void localDisconnectCompletedInTimeDoesNotTimeOutAfterwards() {
        Sm sm = at(Live.DISCONNECTING_LOCAL);
        time.advanceTimeBy(DISCONNECT.minus(MS));
        sm.onEvent(CmEventType.DISCONNECTED, 0, NONE);
        time.advanceTimeBy(LONG_AFTER);
        assertEquals(new Closed(false), sm.state());
        assertEquals(1, transitions.size());
    }

    @Test
    void failureCancelsTheStepTimer() {
        Sm sm = at(Live.RESOLVING_ADDRESS);
        RuntimeException cause = new RuntimeException("native");
        sm.fail(cause);
        time.advanceTimeBy(LONG_AFTER);
        Failed f = assertInstanceOf(Failed.class, sm.state());
        assertSame(cause, f.cause());
        assertEquals(1, transitions.size());
    }

    @Test
    void timerForAnotherStepIsIgnored() {
        // The loop may run a timer task after its step ended; only the current step's timer counts.
        Sm sm = at(Live.RESOLVING_ROUTE);
        assertEquals(ConnectionState.RESOLVING_ROUTE, sm.onTimeout(Step.ADDRESS));
        assertEquals(ConnectionState.RESOLVING_ROUTE, sm.onTimeout(Step.CONNECT));
        assertEquals(List.of(), transitions);
        Failed f = assertInstanceOf(Failed.class, sm.onTimeout(Step.ROUTE));
        assertEquals(Step.ROUTE, f.step());
    }

    @Test
    void stepsWithoutAConfiguredTimeoutNeverTimeOut() {
        Sm sm = machine(Role.CLIENT, Map.of(Step.ROUTE, ROUTE));
        sm.start();
        time.advanceTimeBy(Duration.ofDays(1));
        assertEquals(ConnectionState.RESOLVING_ADDRESS, sm.state());
        sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
        time.advanceTimeBy(ROUTE);
        assertEquals(Step.ROUTE, assertInstanceOf(Failed.class, sm.state()).step());
    }

    @Test
    void timerFiresThroughTheLoopExecutor() {
        // Timers run on the scheduler's thread; the machine is single-threaded, so they must hop back.
        List<Runnable> queued = new ArrayList<>();
        Sm sm = new Sm(Role.CLIENT, TIMEOUTS, queued::add);
        sm.start();
        time.advanceTimeBy(ADDRESS);
        assertEquals(ConnectionState.RESOLVING_ADDRESS, sm.state());
        assertEquals(1, queued.size());
        queued.getFirst().run();
        assertEquals(Step.ADDRESS, assertInstanceOf(Failed.class, sm.state()).step());
    }

    @Test
    void timerOfAnEndedStepIsCancelledNotJustIgnored() {
        // Otherwise every finished step leaves a task on the shared timer scheduler until its deadline.
        List<Runnable> queued = new ArrayList<>();
        Sm sm = new Sm(Role.CLIENT, TIMEOUTS, queued::add);
        sm.start();
        sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
        sm.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE);
        sm.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        time.advanceTimeBy(LONG_AFTER);
        assertEquals(List.of(), queued);
    }

    @Test
    void timerQueuedOnTheLoopAfterItsStepEndedIsIgnored() {
        List<Runnable> queued = new ArrayList<>();
        Sm sm = new Sm(Role.CLIENT, TIMEOUTS, queued::add);
        sm.start();
        time.advanceTimeBy(ADDRESS);
        // The event was ahead of the timer task in the loop's queue.
        sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
        queued.getFirst().run();
        assertEquals(ConnectionState.RESOLVING_ROUTE, sm.state());
    }

    // ---------------------------------------------------------------- states(), start(), fail()

    @Test
    void statesReportsEveryTransitionAndCompletesAfterTheTerminalState() {
        Sm sm = machine(Role.CLIENT);
        StepVerifier.create(sm.states())
                .expectNext(ConnectionState.IDLE)
                .then(sm::start)
                .expectNext(ConnectionState.RESOLVING_ADDRESS)
                .then(() -> sm.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE))
                .expectNext(ConnectionState.RESOLVING_ROUTE)
                .then(() -> sm.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE))
                .expectNext(ConnectionState.CONNECTING)
                .then(() -> sm.onEvent(CmEventType.ESTABLISHED, 0, NONE))
                .expectNext(ConnectionState.ESTABLISHED)
                .then(sm::close)
                .expectNext(new Disconnecting(false))
                .then(() -> sm.onEvent(CmEventType.DISCONNECTED, 0, NONE))
                .expectNext(new Closed(false))
                .expectComplete()
                .verify(VERIFY);
    }

    @Test
    void statesReplaysTheLatestStateToALateSubscriber() {
        Sm sm = at(Live.RESOLVING_ROUTE);
        StepVerifier.create(sm.states())
                .expectNext(ConnectionState.RESOLVING_ROUTE)
                .then(() -> sm.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE))
                .expectNext(ConnectionState.CONNECTING)
                .then(() -> time.advanceTimeBy(CONNECT))
                .assertNext(s -> assertEquals(Step.CONNECT, assertInstanceOf(Failed.class, s).step()))
                .expectComplete()
                .verify(VERIFY);
    }

    @Test
    void failedIsAValueNotAnError() {
        // Subscribers branch on the state; an onError would lose which step failed.
        Sm sm = at(Live.CONNECTING);
        sm.onEvent(CmEventType.REJECTED, RdmaCmException.Rejected.CONSUMER_REJECT, NONE);
        StepVerifier.create(sm.states())
                .assertNext(s -> assertInstanceOf(RdmaCmException.Rejected.class,
                        assertInstanceOf(Failed.class, s).cause()))
                .expectComplete()
                .verify(VERIFY);
    }

    @Test
    void aFailingEffectFedBackAsAnInputComesAfterItsTransitionForEverySubscriber() {
        // Connection performs each returned effect and, when it throws, feeds fail(cause) back: the
        // machine is never re-entered, and subscribers see the entered state before the failure.
        Sm sm = machine(Role.SERVER);
        List<ConnectionState> seen = new ArrayList<>();
        sm.states().subscribe(seen::add);
        sm.start();
        ConnectionStateMachine.Transition accept = sm.last();
        assertEquals(ConnectionStateMachine.Effect.ACCEPT, accept.effect());
        RuntimeException cause = new RuntimeException("rdma_accept failed");
        Failed f = assertInstanceOf(Failed.class, sm.fail(cause));
        assertEquals(ConnectionStateMachine.Effect.TEARDOWN, sm.last().effect());
        assertSame(cause, f.cause());
        assertEquals(Step.ACCEPT, f.step());
        assertEquals(List.of(ConnectionState.IDLE, ConnectionState.ACCEPTING, f), seen);
    }

    @Test
    void anEstablishedConnectionHasNoTimeoutEvenIfOneIsConfigured() {
        java.util.Map<Step, Duration> withTransfer = new java.util.HashMap<>(TIMEOUTS);
        withTransfer.put(Step.TRANSFER, MS);
        Sm sm = new Sm(Role.SERVER, withTransfer, Runnable::run);
        sm.start();
        sm.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        time.advanceTimeBy(LONG_AFTER);
        assertEquals(ConnectionState.ESTABLISHED, sm.state());
    }

    static Stream<Arguments> statesAndTheirEffects() {
        return Stream.of(
                Arguments.of(ConnectionState.IDLE, ConnectionStateMachine.Effect.NONE),
                Arguments.of(ConnectionState.RESOLVING_ADDRESS, ConnectionStateMachine.Effect.RESOLVE_ADDRESS),
                Arguments.of(ConnectionState.RESOLVING_ROUTE, ConnectionStateMachine.Effect.RESOLVE_ROUTE),
                Arguments.of(ConnectionState.CONNECTING, ConnectionStateMachine.Effect.CONNECT),
                Arguments.of(ConnectionState.ACCEPTING, ConnectionStateMachine.Effect.ACCEPT),
                Arguments.of(ConnectionState.ESTABLISHED, ConnectionStateMachine.Effect.ESTABLISHED),
                Arguments.of(new Disconnecting(false), ConnectionStateMachine.Effect.DISCONNECT),
                Arguments.of(new Disconnecting(true), ConnectionStateMachine.Effect.ANSWER_DISCONNECT),
                Arguments.of(new Closed(false), ConnectionStateMachine.Effect.TEARDOWN),
                Arguments.of(new Closed(true), ConnectionStateMachine.Effect.TEARDOWN),
                Arguments.of(new Failed(new RuntimeException(), Step.CONNECT), ConnectionStateMachine.Effect.TEARDOWN));
    }

    @ParameterizedTest
    @MethodSource("statesAndTheirEffects")
    void enteringAStateAsksForItsEffect(ConnectionState state, ConnectionStateMachine.Effect effect) {
        assertEquals(effect, ConnectionStateMachine.Effect.of(state));
    }

    @ParameterizedTest(name = "{1} in {0}")
    @MethodSource("liveStatesTimesEvents")
    void everyReturnedTransitionCarriesTheEffectOfItsTargetOrNoneWhenNothingChanged(Live l, CmEventType e) {
        Sm sm = at(l);
        sm.onEvent(e, statusFor(e), NONE);
        ConnectionStateMachine.Transition t = sm.last();
        assertEquals(l.state, t.from());
        assertSame(sm.state(), t.to());
        if (l == Live.RESOLVING_ADDRESS && e == CmEventType.ADDR_ERROR) {
            assertEquals(ConnectionStateMachine.Effect.RESOLVE_ADDRESS, t.effect(), "the step's effect again");
            assertTrue(t.hasEffect());
            assertNull(t.completedStep(), "a repeated step did not complete");
        } else if (t.to().equals(l.state)) {
            assertEquals(ConnectionStateMachine.Effect.NONE, t.effect());
        } else {
            assertEquals(ConnectionStateMachine.Effect.of(t.to()), t.effect());
        }
    }

    @Test
    void subscriberClosingFromOnNextSeesStatesInOrder() {
        // A user reacting to ESTABLISHED by closing right away: dispose() hands the close to the loop
        // (as Connection does), so it is applied after the transition has reached every subscriber.
        Sm sm = machine(Role.SERVER);
        List<Runnable> loop = new ArrayList<>();
        List<ConnectionState> closer = new ArrayList<>();
        List<ConnectionState> bystander = new ArrayList<>();
        sm.states().subscribe(s -> {
            closer.add(s);
            if (s.equals(ConnectionState.ESTABLISHED)) {
                loop.add(sm::close);
            }
        });
        sm.states().subscribe(bystander::add);
        sm.start();
        sm.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        assertEquals(List.of(ConnectionState.IDLE, ConnectionState.ACCEPTING, ConnectionState.ESTABLISHED), bystander);
        loop.forEach(Runnable::run);
        List<ConnectionState> expected = List.of(ConnectionState.IDLE, ConnectionState.ACCEPTING,
                ConnectionState.ESTABLISHED, new Disconnecting(false));
        assertEquals(expected, closer);
        assertEquals(expected, bystander);
        assertEquals(new Disconnecting(false), sm.state());
    }

    @ParameterizedTest
    @EnumSource(Role.class)
    void startTwiceThrows(Role role) {
        Sm sm = machine(role);
        ConnectionState first = sm.start();
        assertThrows(IllegalStateException.class, sm::start);
        assertSame(first, sm.state());
        assertEquals(1, transitions.size());
    }

    @ParameterizedTest
    @EnumSource(Live.class)
    void failRecordsTheCauseAndTheCurrentStep(Live l) {
        Sm sm = at(l);
        IllegalStateException cause = new IllegalStateException("completion error");
        Failed f = assertInstanceOf(Failed.class, sm.fail(cause));
        assertSame(cause, f.cause());
        assertEquals(l.failedStep(), f.step());
        assertEquals(List.of(new Transition(l.state, f)), transitions);
        StepVerifier.create(sm.states()).expectNext(f).expectComplete().verify(VERIFY);
    }

    // ---------------------------------------------------------------- the step a transition completed (its timer)

    /** Every setup step and both ends of a disconnect report their duration; what is left is never a step. */
    @Test
    void everySuccessfulStepIsReportedOnceIncludingTheDisconnect() {
        Sm client = machine(Role.CLIENT);
        client.start();
        client.onEvent(CmEventType.ADDR_RESOLVED, 0, NONE);
        client.onEvent(CmEventType.ROUTE_RESOLVED, 0, NONE);
        client.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        client.close();
        client.onEvent(CmEventType.DISCONNECTED, 0, NONE);
        assertEquals(java.util.Arrays.asList(null, Step.ADDRESS, Step.ROUTE, Step.CONNECT, null, Step.DISCONNECT),
                client.returned.stream().map(ConnectionStateMachine.Transition::completedStep).toList(),
                "IDLE and ESTABLISHED are not steps that complete");

        Sm server = machine(Role.SERVER);
        server.start();
        server.onEvent(CmEventType.ESTABLISHED, 0, NONE);
        server.onEvent(CmEventType.DISCONNECTED, 0, NONE); // the peer's disconnect
        server.teardownComplete();
        assertEquals(java.util.Arrays.asList(null, Step.ACCEPT, null, Step.DISCONNECT),
                server.returned.stream().map(ConnectionStateMachine.Transition::completedStep).toList());
    }

    /** A failed, timed-out or cancelled step has no duration to report, and an input that changed nothing neither. */
    @ParameterizedTest
    @EnumSource(Live.class)
    void failuresCancelsAndNoChangeCompleteNoStep(Live l) {
        Sm failed = at(l);
        assertNull(failed.machine.fail(new IllegalStateException("boom")).completedStep());
        assertNull(failed.machine.fail(new IllegalStateException("again")).completedStep(), "no change");
        if (l.state.step() != null && l.state.step() != Step.TRANSFER && !(l.state instanceof Disconnecting)) {
            assertNull(at(l).machine.close().completedStep(), "closed during setup: a cancel");
        }
    }
}
