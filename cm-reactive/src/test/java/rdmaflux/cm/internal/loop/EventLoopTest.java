package rdmaflux.cm.internal.loop;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/** The loop's own timers and its shutdown, on a loop that watches no descriptor (poll(2) on its wake-up fd only). */
class EventLoopTest {
    private static final Duration T = Duration.ofSeconds(10);

    static final class Idle extends EventLoop {
        Idle() {
            super("rdmaflux-test-loop");
            start();
        }

        @Override
        int[] fds() {
            return new int[0];
        }

        @Override
        void onReady(boolean[] ready) {
        }
    }

    /**
     * A loop that spins while told to, watching one eventfd of the test's: what a completion loop does
     * while a connection busy polls, without a device.
     */
    static final class Spinner extends EventLoop {
        final TestEventFd fd = new TestEventFd();
        volatile boolean spin = true;
        volatile long turns;
        volatile boolean sawFd;

        Spinner() {
            super("rdmaflux-test-spinner");
            start();
        }

        @Override
        int[] fds() {
            return fd.fds;
        }

        @Override
        void onReady(boolean[] ready) {
            if (ready[0]) {
                fd.drain();
                sawFd = true;
            }
        }

        @Override
        boolean spins() {
            return spin;
        }

        @Override
        boolean spin() {
            turns++; // loop thread only writes it
            return false;
        }

        @Override
        void onExit() {
            fd.close();
        }

        void awaitTurns(long more) {
            long until = turns + more;
            long deadline = System.nanoTime() + T.toNanos();
            while (turns < until) {
                assertTrue(System.nanoTime() - deadline < 0, "the loop did not turn " + more + " times within " + T);
                Thread.onSpinWait();
            }
        }
    }

    @Test
    void aSpinningLoopRunsTasksFiresTimersWatchesItsDescriptorsAndShutsDown() throws Exception {
        Spinner loop = new Spinner();
        try {
            loop.awaitTurns(1000);
            CountDownLatch task = new CountDownLatch(1);
            loop.execute(task::countDown);
            assertTrue(task.await(T.toSeconds(), TimeUnit.SECONDS), "a task queued from another thread never ran");
            CountDownLatch timer = new CountDownLatch(1);
            loop.schedule(timer::countDown, TimeUnit.MILLISECONDS.toNanos(20));
            assertTrue(timer.await(T.toSeconds(), TimeUnit.SECONDS), "a timer never fired");
            loop.fd.signal();
            long deadline = System.nanoTime() + T.toNanos();
            while (!loop.sawFd) {
                assertTrue(System.nanoTime() - deadline < 0, "a readable descriptor was not noticed within " + T);
                Thread.sleep(1);
            }
            loop.awaitTurns(1000); // still spinning: nothing above made it wait
        } finally {
            loop.shutdown();
        }
        loop.terminated().block(T);
        loop.thread().join(T.toMillis());
        assertFalse(loop.thread().isAlive());
    }

    @Test
    void aLoopThatStopsSpinningIsStillWokenByATaskQueuedAtThatMoment() throws Exception {
        // While spinning, execute() skips the wake-up write; a task queued as the loop goes back to
        // waiting must still be seen (by the loop's last look at its queue, or by the wake-up).
        Spinner loop = new Spinner();
        try {
            for (int i = 0; i < 300; i++) {
                // As a completion loop starts spinning: on its own thread (a waiting loop reads no flag).
                loop.execute(() -> loop.spin = true);
                loop.awaitTurns(1 + i % 7);
                loop.spin = false;
                if (i % 2 == 0) {
                    Thread.onSpinWait(); // vary the moment a little
                }
                CountDownLatch ran = new CountDownLatch(1);
                loop.execute(ran::countDown);
                assertTrue(ran.await(T.toSeconds(), TimeUnit.SECONDS), "round " + i + ": the task was not run");
            }
        } finally {
            loop.shutdown();
            loop.terminated().block(T);
        }
    }

    @Test
    void aSpinningTurnAllocatesNothing() {
        Spinner loop = new Spinner();
        try {
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
            long id = loop.thread().threadId();
            long[] bytes = new long[10];
            // As RcOperationsIT's probe: the JIT may allocate once in a while, a turn that allocated would
            // in every window.
            for (int w = 0; w < bytes.length; w++) {
                long before = threads.getThreadAllocatedBytes(id);
                loop.awaitTurns(20_000); // several descriptor checks (every DESCRIPTOR_TURNS turns) too
                bytes[w] = threads.getThreadAllocatedBytes(id) - before;
                if (bytes[w] == 0) {
                    return;
                }
            }
            throw new AssertionError("the spinning loop allocated in every window: " + java.util.Arrays.toString(bytes));
        } finally {
            loop.shutdown();
            loop.terminated().block(T);
        }
    }

    @Test
    void timersFireOnTheLoopInDeadlineOrderAndCancelledOnesNever() throws Exception {
        Idle loop = new Idle();
        List<String> fired = new CopyOnWriteArrayList<>();
        CountDownLatch done = new CountDownLatch(1);
        loop.schedule(() -> {
            fired.add("late" + (loop.inLoop() ? "" : " off-loop"));
            done.countDown();
        }, TimeUnit.MILLISECONDS.toNanos(60));
        loop.schedule(() -> fired.add("early" + (loop.inLoop() ? "" : " off-loop")), TimeUnit.MILLISECONDS.toNanos(20));
        Disposable cancelled = loop.schedule(() -> fired.add("cancelled"), TimeUnit.MILLISECONDS.toNanos(40));
        cancelled.dispose();
        assertTrue(done.await(T.toSeconds(), TimeUnit.SECONDS), "the late timer never fired");
        assertEquals(List.of("early", "late"), fired);
        loop.shutdown();
        loop.terminated().block(T);
    }

    /** Periodic work (keepalive ticks) re-arms its one timer: the same object, nothing allocated per period. */
    @Test
    void aFiredTimerReArmsItselfAndACancelledOneStopsFiring() throws Exception {
        Idle loop = new Idle();
        CountDownLatch fiveTicks = new CountDownLatch(5);
        List<Disposable> timers = new CopyOnWriteArrayList<>();
        Disposable[] current = new Disposable[1];
        Runnable[] tick = new Runnable[1];
        tick[0] = () -> {
            fiveTicks.countDown();
            if (fiveTicks.getCount() > 0) {
                current[0] = loop.rearm(current[0], tick[0], TimeUnit.MILLISECONDS.toNanos(5));
                timers.add(current[0]);
            }
        };
        loop.execute(() -> current[0] = loop.schedule(tick[0], TimeUnit.MILLISECONDS.toNanos(5)));
        assertTrue(fiveTicks.await(T.toSeconds(), TimeUnit.SECONDS), "the timer stopped ticking");
        assertEquals(4, timers.size());
        assertTrue(timers.stream().allMatch(t -> t == timers.getFirst()), "one timer object, re-armed: " + timers);

        java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
        CountDownLatch ran = new CountDownLatch(1);
        Runnable once = () -> {
            runs.incrementAndGet();
            ran.countDown();
        };
        Disposable off = loop.schedule(once, TimeUnit.MILLISECONDS.toNanos(5));
        assertTrue(ran.await(T.toSeconds(), TimeUnit.SECONDS));
        off.dispose();
        // Cancelled after it fired: re-arming it keeps it cancelled, so it never runs again.
        loop.execute(() -> loop.rearm(off, once, 0));
        CountDownLatch later = new CountDownLatch(1);
        loop.schedule(later::countDown, TimeUnit.MILLISECONDS.toNanos(20));
        assertTrue(later.await(T.toSeconds(), TimeUnit.SECONDS));
        assertEquals(1, runs.get());
        assertTrue(off.isDisposed());
        loop.shutdown();
        loop.terminated().block(T);
    }

    @Test
    void aTimerWaitsAtLeastItsDelay() throws Exception {
        Idle loop = new Idle();
        CountDownLatch done = new CountDownLatch(1);
        long[] at = new long[1];
        long start = System.nanoTime();
        loop.schedule(() -> {
            at[0] = System.nanoTime();
            done.countDown();
        }, TimeUnit.MILLISECONDS.toNanos(50));
        assertTrue(done.await(T.toSeconds(), TimeUnit.SECONDS));
        assertTrue(at[0] - start >= TimeUnit.MILLISECONDS.toNanos(50), "fired early");
        loop.shutdown();
        loop.terminated().block(T);
    }

    @Test
    void aDelayEmitsOnTheLoopAfterItsTimeAndACancelledOneNever() throws Exception {
        Idle loop = new Idle();
        long start = System.nanoTime();
        AtomicReference<String> on = new AtomicReference<>();
        Long v = loop.delay(Duration.ofMillis(50)).doOnNext(x -> on.set(loop.inLoop() ? "loop" : "elsewhere")).block(T);
        assertEquals(0L, v);
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(50), "emitted early");
        assertEquals("loop", on.get());
        AtomicBoolean fired = new AtomicBoolean();
        // Long enough that a test thread descheduled between subscribe and dispose on a loaded host does
        // not see it fire legitimately (a 20 ms delay did).
        Disposable d = loop.delay(Duration.ofMillis(500)).subscribe(x -> fired.set(true));
        d.dispose();
        loop.delay(Duration.ofMillis(600)).block(T);
        assertFalse(fired.get(), "a cancelled delay fired");
        loop.shutdown();
        loop.terminated().block(T);
    }

    @Test
    void shutdownRunsTheTasksQueuedBeforeItThenEndsTheThread() throws Exception {
        Idle loop = new Idle();
        List<String> ran = new CopyOnWriteArrayList<>();
        loop.execute(() -> ran.add("before"));
        loop.shutdown();
        loop.terminated().block(T);
        loop.thread().join(T.toMillis());
        assertFalse(loop.thread().isAlive());
        assertEquals(List.of("before"), ran);
    }
}
