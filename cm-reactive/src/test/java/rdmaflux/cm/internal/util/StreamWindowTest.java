package rdmaflux.cm.internal.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.RejectedExecutionException;

import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import rdmaflux.testing.RandomCases;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/** The window accounting of a stream sent element by element: when the source is asked for more, and how much. */
class StreamWindowTest {

    /** A scheduler whose tasks wait until the test runs them. */
    private static final class ByHand implements Scheduler {
        final Queue<Runnable> tasks = new ArrayDeque<>();
        boolean rejecting;

        @Override
        public Disposable schedule(Runnable task) {
            if (rejecting) {
                throw new RejectedExecutionException("disposed");
            }
            tasks.add(task);
            return () -> tasks.remove(task);
        }

        @Override
        public Worker createWorker() {
            throw new UnsupportedOperationException();
        }

        void runAll() {
            Runnable t;
            while ((t = tasks.poll()) != null) {
                t.run();
            }
        }
    }

    /** A source's subscription: what was requested. */
    private static final class Requests implements Subscription {
        final List<Long> requests = new ArrayList<>();
        long total;

        @Override
        public void request(long n) {
            requests.add(n);
            total += n;
        }

        @Override
        public void cancel() {
        }
    }

    private final ByHand scheduler = new ByHand();
    private final Requests source = new Requests();
    private StreamWindow window;

    /** A window whose request task asks {@link #source}, as a pushing source's owner does. */
    private StreamWindow window(int size) {
        window = new StreamWindow(size, scheduler, () -> {
            window.requestStarted();
            window.requestFrom(source);
        });
        return window;
    }

    /** An element finished and the stream goes on, as the owners report it. */
    private void finishOne() {
        int left = window.finish();
        window.finished(window.replace(), left);
    }

    @Test
    void theBatchIsHalfTheWindowAndAtLeastOne() {
        assertEquals(1, StreamWindow.batch(1));
        assertEquals(1, StreamWindow.batch(2));
        assertEquals(1, StreamWindow.batch(3));
        assertEquals(2, StreamWindow.batch(4));
        assertEquals(16, StreamWindow.batch(32));
        assertThrows(IllegalArgumentException.class, () -> new StreamWindow(0, scheduler, () -> { }));
    }

    @Test
    void theRequestIsDueAtHalfTheWindowWhenNothingIsOutstandingOrOnceTheStreamEnded() {
        assertFalse(StreamWindow.requestDue(1, 2, 3, false));
        assertTrue(StreamWindow.requestDue(2, 2, 2, false), "half the window finished");
        assertTrue(StreamWindow.requestDue(1, 2, 0, false), "nothing outstanding: no waiting for half the window");
        assertTrue(StreamWindow.requestDue(0, 2, 3, true), "ended: the owner's task has releases to hand back");
        assertFalse(StreamWindow.requestDue(0, 2, 3, false), "not replaced and not ended");
    }

    @Test
    void finishesScheduleOneRequestForWhatFinishedUntilItRuns() {
        window(4);
        for (int i = 0; i < 4; i++) {
            window.take();
        }
        finishOne();
        assertEquals(0, scheduler.tasks.size());
        finishOne();
        assertEquals(1, scheduler.tasks.size());
        finishOne();
        assertEquals(1, scheduler.tasks.size(), "already scheduled");
        scheduler.runAll();
        assertEquals(List.of(3L), source.requests, "everything that finished before the task ran");
        assertEquals(1, window.outstanding());
        finishOne();
        scheduler.runAll();
        assertEquals(List.of(3L, 1L), source.requests, "nothing outstanding: asked at once");
    }

    @Test
    void anEndedStreamAsksNothingButStillRunsItsTask() {
        window(4);
        window.take();
        window.take();
        assertTrue(window.end());
        assertFalse(window.end(), "once");
        int left = window.finish();
        window.finished(0, left);
        assertEquals(1, scheduler.tasks.size(), "the owner's task runs (its releases)");
        scheduler.runAll();
        assertEquals(List.of(), source.requests);
    }

    @Test
    void grantedCreditIsTakenOnce() {
        window(8);
        window.grant(8);
        assertEquals(8, window.takeCredit());
        assertEquals(0, window.takeCredit());
    }

    @Test
    void aDisposedSchedulerRunsTheTaskOnTheCallingThread() {
        window(2);
        scheduler.rejecting = true;
        window.take();
        finishOne();
        assertEquals(List.of(1L), source.requests);
        List<String> ran = new ArrayList<>();
        window.schedule(() -> ran.add("signal"));
        assertEquals(List.of("signal"), ran);
    }

    @Test
    void theSourceIsNeverAskedForMoreThanTheWindowAndNeverLeftWithoutDemand() {
        RandomCases.run(300, r -> {
            int size = 1 + r.nextInt(16);
            int total = r.nextInt(200);
            window(size);
            scheduler.tasks.clear();
            source.requests.clear();
            source.total = 0;
            source.request(size); // the subscription's first request
            int emitted = 0;
            int finished = 0;
            int steps = 0;
            while (finished < total) {
                assertTrue(++steps < 100_000, "stalled at " + finished + " of " + total);
                int outstanding = emitted - finished;
                boolean canEmit = emitted < total && emitted < source.total;
                switch (r.nextInt(3)) {
                    case 0 -> {
                        if (canEmit) {
                            window.take();
                            emitted++;
                        }
                    }
                    case 1 -> {
                        if (outstanding > 0) {
                            finishOne();
                            finished++;
                        }
                    }
                    default -> scheduler.runAll();
                }
                assertTrue(window.outstanding() <= size, "outstanding " + window.outstanding() + " > " + size);
                assertTrue(source.total - finished <= size, "asked for " + source.total + " with " + finished
                        + " finished, window " + size);
                if (emitted - finished == 0 && emitted == source.total && emitted < total) {
                    assertFalse(scheduler.tasks.isEmpty(), "nothing outstanding, no demand and no request due");
                }
            }
            scheduler.runAll();
            assertEquals(size + finished, source.total, "every finished element's place was asked for again");
        });
    }
}
