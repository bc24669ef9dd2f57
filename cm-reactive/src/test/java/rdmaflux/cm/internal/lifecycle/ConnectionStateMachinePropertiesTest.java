package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionState;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

import reactor.core.Disposable;
import rdmaflux.cm.ConnectionState.Closed;
import rdmaflux.cm.ConnectionState.Disconnecting;
import rdmaflux.cm.ConnectionState.Failed;
import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Effect;
import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Role;
import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Transition;
import rdmaflux.testing.RandomCases;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.Errno;

/**
 * Random sequences of every input the {@link ConnectionStateMachine} takes (CM events of every type with
 * random statuses and private data, step timers firing on time or late, stale timeouts, close, fail,
 * teardownComplete, a second start), checked after each input against rules written down here
 * independently of the machine: only the lifecycle's edges are taken, a terminal state is entered at
 * most once and then never left, every path into it carries the TEARDOWN effect exactly once, each
 * step state has exactly one live timer (its own) and a terminal state none, and {@code states()}
 * reports exactly the states passed through.
 */
class ConnectionStateMachinePropertiesTest {
    private static final Map<Step, Duration> TIMEOUTS = Map.of(Step.ADDRESS, Duration.ofSeconds(2), Step.ROUTE,
            Duration.ofSeconds(3), Step.CONNECT, Duration.ofSeconds(5), Step.ACCEPT, Duration.ofSeconds(7),
            Step.DISCONNECT, Duration.ofSeconds(11));
    private static final CmEventType[] EVENTS = CmEventType.values();
    private static final Step[] STEPS = Step.values();

    /** A step timer armed by the machine, fired or cancelled by the test. */
    private static final class FakeTimer implements Disposable {
        final Runnable task;
        boolean disposed;
        boolean fired;

        FakeTimer(Runnable task) {
            this.task = task;
        }

        boolean live() {
            return !disposed && !fired;
        }

        @Override
        public void dispose() {
            disposed = true;
        }

        @Override
        public boolean isDisposed() {
            return disposed;
        }
    }

    /** One machine under test, with the timers it armed and which step each one is for. */
    private static final class Harness {
        final List<FakeTimer> timers = new ArrayList<>();
        final Map<FakeTimer, Step> stepOf = new java.util.IdentityHashMap<>();
        final List<Step> expired = new ArrayList<>();
        final ConnectionStateMachine machine;
        final List<ConnectionState> reported = new ArrayList<>();
        boolean reportCompleted;

        Harness(Role role) {
            machine = new ConnectionStateMachine(role, TIMEOUTS, (task, nanos) -> {
                FakeTimer t = new FakeTimer(task);
                timers.add(t);
                return t;
            }, expired::add);
            machine.states().subscribe(reported::add, e -> fail("states() failed: " + e), () -> reportCompleted = true);
        }

        List<FakeTimer> live() {
            return timers.stream().filter(FakeTimer::live).toList();
        }
    }

    @Test
    void randomInputSequencesKeepEveryRuleOfTheLifecycle() {
        Map<Role, java.util.Set<Class<?>>> reached = new EnumMap<>(Role.class);
        RandomCases.run(3000, r -> randomRun(r, reached));
        // Guards the generator: rules checked only in the first states would prove little.
        assertTrue(reached.get(Role.CLIENT).containsAll(List.of(ConnectionState.ResolvingRoute.class,
                ConnectionState.Connecting.class, ConnectionState.Established.class, Disconnecting.class,
                Closed.class, Failed.class)), "client states reached: " + reached.get(Role.CLIENT));
        assertTrue(reached.get(Role.SERVER).containsAll(List.of(ConnectionState.Accepting.class,
                ConnectionState.Established.class, Disconnecting.class, Closed.class, Failed.class)),
                "server states reached: " + reached.get(Role.SERVER));
    }

    private static void randomRun(Random r, Map<Role, java.util.Set<Class<?>>> reached) {
        Role role = r.nextBoolean() ? Role.CLIENT : Role.SERVER;
        Harness h = new Harness(role);
        ConnectionStateMachine m = h.machine;
        List<ConnectionState> visited = new ArrayList<>(List.of(m.state()));
        int terminalEntries = 0;
        int teardowns = 0;
        int inputs = 1 + r.nextInt(40);
        StringBuilder trace = new StringBuilder(role.name());
        for (int i = 0; i < inputs; i++) {
            ConnectionState before = m.state();
            int timersBefore = h.timers.size();
            Transition t;
            String input;
            boolean retry = false;
            switch (r.nextInt(10)) {
                case 0 -> {
                    input = "start";
                    if (!(before instanceof ConnectionState.Idle)) {
                        assertThrows(IllegalStateException.class, m::start, "start in " + before);
                        assertSame(before, m.state(), "a refused start changed the state");
                        continue;
                    }
                    t = m.start();
                }
                case 1, 2, 3 -> {
                    // Half the time the event the state waits for, so runs reach the later states.
                    CmEventType type = r.nextBoolean() ? awaited(before, r) : EVENTS[r.nextInt(EVENTS.length)];
                    // A quarter of the time ETIMEDOUT, the status an address resolution retries on.
                    int status = r.nextInt(4) == 0 ? -Errno.ETIMEDOUT : RandomCases.anyInt(r);
                    input = "event " + type + " " + status;
                    t = m.onEvent(type, status, RandomCases.bytes(r, 148));
                    retry = before instanceof ConnectionState.ResolvingAddress && type == CmEventType.ADDR_ERROR
                            && status == -Errno.ETIMEDOUT;
                }
                case 4 -> {
                    List<FakeTimer> live = h.live();
                    if (live.isEmpty()) {
                        input = "timeout (none armed)";
                        t = m.onTimeout(STEPS[r.nextInt(STEPS.length)]);
                    } else {
                        // The CM loop runs the timer, which reports its step; the owner feeds it back.
                        FakeTimer timer = live.get(r.nextInt(live.size()));
                        timer.fired = true;
                        timer.task.run();
                        Step step = h.expired.getLast();
                        input = "timer " + step;
                        t = m.onTimeout(step);
                        assertInstanceOf(Failed.class, t.to(), "a live timer fired without failing its step");
                        assertInstanceOf(RdmaCmException.StepTimeout.class, ((Failed) t.to()).cause());
                    }
                }
                case 5 -> {
                    Step step = STEPS[r.nextInt(STEPS.length)];
                    input = "stale timeout " + step;
                    t = m.onTimeout(step);
                    if (before.isTerminal() || before.step() != step) {
                        assertSame(before, t.to(), "a timeout for another step changed the state");
                    }
                }
                case 6, 7 -> {
                    input = "close";
                    t = m.close();
                }
                case 8 -> {
                    input = "fail";
                    t = m.fail(new IllegalStateException("effect failed"));
                }
                default -> {
                    input = "teardownComplete";
                    t = m.teardownComplete();
                }
            }
            trace.append(" -> ").append(input);
            ConnectionState after = m.state();
            String where = "after " + trace + ": " + before + " -> " + after;

            assertSame(before, t.from(), where);
            assertSame(after, t.to(), where);
            assertEquals(t.changed(), before != after, "changed() disagrees with the state: " + where);
            if (!t.changed()) {
                // The one input that repeats a step's effect: a timed-out address resolution, within its step.
                assertEquals(retry ? Effect.RESOLVE_ADDRESS : Effect.NONE, t.effect(), where);
                assertEquals(timersBefore, h.timers.size(), "an input that changed nothing armed a timer: " + where);
            } else {
                assertTrue(legal(role, before, after), "illegal transition " + where);
                assertEquals(Effect.of(after), t.effect(), where);
                visited.add(after);
                reached.computeIfAbsent(role, k -> new java.util.HashSet<>()).add(after.getClass());
            }
            if (after.isTerminal() && t.changed()) {
                terminalEntries++;
            }
            if (t.effect() == Effect.TEARDOWN) {
                teardowns++;
                assertTrue(after.isTerminal(), "TEARDOWN outside a terminal state: " + where);
            }
            assertTrue(terminalEntries <= 1, "a terminal state was entered twice: " + where);
            if (before.isTerminal()) {
                assertSame(before, after, "a terminal state was left: " + where);
            }
            if (after instanceof Failed f) {
                assertNotNull(f.cause(), where);
                assertNotNull(f.step(), where);
            }
            checkTimers(h, after, where);
        }
        assertEquals(terminalEntries, teardowns, "TEARDOWN effects per path into a terminal state, " + trace);
        assertEquals(visited, h.reported, "states() reported, " + trace);
        assertEquals(m.state().isTerminal(), h.reportCompleted, "states() completion, " + trace);
    }

    /** Exactly one live timer in a step state with a timeout, for that step; none anywhere else. */
    private static void checkTimers(Harness h, ConnectionState s, String where) {
        List<FakeTimer> live = h.live();
        Step step = s.step();
        boolean timed = !s.isTerminal() && step != null && step != Step.TRANSFER && TIMEOUTS.containsKey(step);
        if (!timed) {
            assertTrue(live.isEmpty(), live.size() + " timer(s) armed in " + s + " " + where);
            return;
        }
        assertEquals(1, live.size(), "live timers in " + s + " " + where);
        // A timer's task only reports its step to the owner (which would feed it back): that tells which
        // step the timer was armed for, without firing it at the machine.
        int expiredBefore = h.expired.size();
        live.getFirst().task.run();
        Step armedFor = h.expired.removeLast();
        assertEquals(expiredBefore, h.expired.size());
        assertEquals(step, armedFor, "the live timer belongs to another step " + where);
    }

    /** The event a state waits for on its way to ESTABLISHED and then CLOSED, or a failure. */
    private static CmEventType awaited(ConnectionState s, Random r) {
        return switch (s) {
            case ConnectionState.ResolvingAddress a -> r.nextInt(4) == 0 ? CmEventType.ADDR_ERROR : CmEventType.ADDR_RESOLVED;
            case ConnectionState.ResolvingRoute a -> r.nextInt(4) == 0 ? CmEventType.ROUTE_ERROR : CmEventType.ROUTE_RESOLVED;
            case ConnectionState.Connecting c -> r.nextInt(4) == 0 ? CmEventType.REJECTED : CmEventType.ESTABLISHED;
            case ConnectionState.Accepting a -> r.nextInt(4) == 0 ? CmEventType.CONNECT_ERROR : CmEventType.ESTABLISHED;
            case ConnectionState.Established e -> CmEventType.DISCONNECTED;
            case Disconnecting d -> r.nextBoolean() ? CmEventType.DISCONNECTED : CmEventType.TIMEWAIT_EXIT;
            default -> EVENTS[r.nextInt(EVENTS.length)];
        };
    }

    /** The lifecycle's edges, written down from docs/api.md ("States") rather than from the machine. */
    private static boolean legal(Role role, ConnectionState from, ConnectionState to) {
        if (from.isTerminal()) {
            return false;
        }
        if (to instanceof Failed) {
            return true; // any live state may fail
        }
        boolean cancel = to instanceof Closed c && !c.remote();
        return switch (from) {
            case ConnectionState.Idle i -> role == Role.CLIENT ? to == ConnectionState.RESOLVING_ADDRESS || cancel
                    : to == ConnectionState.ACCEPTING || cancel;
            case ConnectionState.ResolvingAddress a -> role == Role.CLIENT && (to == ConnectionState.RESOLVING_ROUTE || cancel);
            case ConnectionState.ResolvingRoute a -> role == Role.CLIENT && (to == ConnectionState.CONNECTING || cancel);
            case ConnectionState.Connecting c -> role == Role.CLIENT && (to == ConnectionState.ESTABLISHED || cancel);
            case ConnectionState.Accepting a -> role == Role.SERVER && (to == ConnectionState.ESTABLISHED || cancel);
            case ConnectionState.Established e -> to instanceof Disconnecting;
            case Disconnecting d -> to instanceof Closed c && c.remote() == d.remote();
            default -> false;
        };
    }
}
