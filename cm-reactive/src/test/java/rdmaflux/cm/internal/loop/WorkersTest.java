package rdmaflux.cm.internal.loop;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Mono;

class WorkersTest {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void aTaskGoesToAnIdleThreadRatherThanANewOne() {
        Workers w = new Workers("reuse", 8);
        try {
            Set<String> ran = ConcurrentHashMap.newKeySet();
            for (int i = 0; i < 20; i++) {
                if (i > 0) {
                    await().atMost(T).until(() -> w.idle() == w.threads());
                }
                Mono.fromRunnable(() -> ran.add(Thread.currentThread().getName()))
                        .subscribeOn(w.scheduler()).block(T);
            }
            assertEquals(Set.of("reuse-worker-0"), ran, "twenty tasks one after the other, each with a thread idle");
            assertEquals(1, w.threads());
        } finally {
            w.shutdown();
            w.await();
        }
    }

    @Test
    void busyThreadsGrowToTheMostAndTheRestWaitInTheQueue() throws InterruptedException {
        Workers w = new Workers("grow", 3);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger done = new AtomicInteger();
        try {
            for (int i = 0; i < 5; i++) {
                w.scheduler().schedule(waitFor(release, done));
            }
            await().atMost(T).until(() -> w.threads() == 3 && w.queued() == 2);
            release.countDown();
            await().atMost(T).until(() -> done.get() == 5);
            assertEquals(3, w.threads(), "no thread beyond the most");
        } finally {
            w.shutdown();
            w.await();
        }
    }

    @Test
    void aShutDownWorkersRefusesNewTasksAndRunsTheQueuedOnes() throws InterruptedException {
        Workers w = new Workers("stop", 1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger done = new AtomicInteger();
        w.scheduler().schedule(waitFor(release, done));
        w.scheduler().schedule(done::incrementAndGet);
        await().atMost(T).until(() -> w.queued() == 1);
        w.shutdown();
        assertThrows(RuntimeException.class, () -> w.scheduler().schedule(done::incrementAndGet));
        release.countDown();
        w.await();
        assertEquals(2, done.get(), "the running and the queued task ran");
        assertEquals(0, w.threads(), "every thread ended");
    }

    /** A task that waits for {@code release}, then counts itself {@code done}. */
    private static Runnable waitFor(CountDownLatch release, AtomicInteger done) {
        return () -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            done.incrementAndGet();
        };
    }
}
