package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/** The loop's own timers and its shutdown, on a loop that watches no descriptor (poll(2) on its wake-up fd only). */
class EventLoopTest {
    private static final Duration T = Duration.ofSeconds(10);

    private static final class Idle extends EventLoop {
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
