package rdmaflux.cm.internal.loop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import rdmaflux.cm.internal.LoopsBlockHoundIntegration;
import rdmaflux.cm.internal.rc.ConnectionLock;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * The loops under BlockHound, installed as an application installs it: with the integrations that
 * {@link ServiceLoader} finds, rdmaflux's among them. A blocking call on a loop thread is reported, and the
 * loops' own waits are not: a spinning loop's pause, an idle loop's {@code poll(2)} (an FFM downcall, which
 * BlockHound does not see), a signal thread's sleep between tasks, a wait for a connection's lock.
 *
 * <p>Surefire runs the tag {@code blockhound} in a JVM of its own with the flags BlockHound needs
 * (cm-reactive/pom.xml): installed,
 * BlockHound stays for the JVM's life. Reports are collected, not thrown, so that a report cannot break a
 * loop and hide the next one.
 */
@Tag("blockhound")
class LoopsBlockHoundTest {
    private static final Duration T = Duration.ofSeconds(30);
    /** Each blocking call reported: the thread, then the method. */
    private static final List<String> REPORTS = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void install() {
        BlockHound.builder()
                .loadIntegrations()
                .blockingMethodCallback(m -> REPORTS.add(Thread.currentThread().getName() + ": " + m))
                .install();
    }

    @BeforeEach
    void forgetEarlierReports() {
        REPORTS.clear();
    }

    private static void run(Executor loop, Runnable task) throws Exception {
        CompletableFuture<Void> done = new CompletableFuture<>();
        loop.execute(() -> {
            try {
                task.run();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        done.get(T.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void serviceLoaderFindsTheIntegration() {
        assertTrue(ServiceLoader.load(BlockHoundIntegration.class).stream()
                .anyMatch(p -> p.type() == LoopsBlockHoundIntegration.class), "META-INF/services names it");
    }

    @Test
    void aBlockingCallOnEveryKindOfLoopThreadIsReported() throws Exception {
        EventLoopTest.Idle loop = new EventLoopTest.Idle();
        CompletionLoop completions = new CompletionLoop("rdmaflux-test-completion-0", 0);
        SignalScheduler signals = new SignalScheduler("rdmaflux-test", 1);
        try {
            run(loop, () -> sleep(1));
            run(completions, () -> sleep(1));
            run(signals::schedule, () -> sleep(1));
        } finally {
            loop.shutdown();
            completions.shutdown();
            signals.dispose();
        }
        assertEquals(List.of("rdmaflux-test-loop: java.lang.Thread.sleepNanos0",
                "rdmaflux-test-completion-0: java.lang.Thread.sleepNanos0",
                "rdmaflux-test-signal-0: java.lang.Thread.sleepNanos0"), REPORTS);
    }

    @Test
    void theLoopsOwnWaitsAreNotReported() throws Exception {
        EventLoopTest.Spinner spinner = new EventLoopTest.Spinner();
        EventLoopTest.Idle idle = new EventLoopTest.Idle();
        SignalScheduler signals = new SignalScheduler("rdmaflux-test", 1);
        ConnectionLock lock = new ConnectionLock();
        try {
            // Thousands of turns that find nothing: each ends with Thread.onSpinWait().
            spinner.awaitTurns(10_000);
            // A timer 50 ms away: the loop waits for it in poll(2).
            CountDownLatch fired = new CountDownLatch(1);
            idle.schedule(fired::countDown, TimeUnit.MILLISECONDS.toNanos(50));
            assertTrue(fired.await(T.toMillis(), TimeUnit.MILLISECONDS), "the timer fired");
            // A signal thread with nothing to do parks until the next task.
            for (int i = 0; i < 5; i++) {
                run(signals::schedule, () -> { });
                sleep(10); // long enough for the idle signal thread to park: the wait under test

            }
            // A loop task that waits for the connection's lock, held by this thread for a while.
            lock.lock();
            CompletableFuture<Void> locked = new CompletableFuture<>();
            idle.execute(() -> {
                lock.lock();
                lock.unlock();
                locked.complete(null);
            });
            long deadline = System.nanoTime() + T.toNanos();
            while (!lock.hasQueuedThreads()) { // the loop task is parked on the lock
                assertTrue(System.nanoTime() < deadline, "the loop task never waited for the lock");
                Thread.onSpinWait();
            }
            lock.unlock();
            locked.get(T.toMillis(), TimeUnit.MILLISECONDS);
            // A loop task that blocks is still reported: the waits above were allowed, not the loops unpoliced.
            run(idle, () -> sleep(1));
        } finally {
            spinner.shutdown();
            idle.shutdown();
            signals.dispose();
        }
        assertEquals(List.of("rdmaflux-test-loop: java.lang.Thread.sleepNanos0"), REPORTS);
    }
}
