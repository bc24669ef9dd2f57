package rdmaflux.cm.internal.loop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.NonBlocking;
import reactor.core.scheduler.Schedulers;

/**
 * Every kind of loop thread is a Reactor {@link NonBlocking} thread: {@code block()} there fails at once with
 * Reactor's message instead of waiting for a signal that only that thread could deliver. A bare event loop
 * (what the CM loop is too: its thread is made the same way, by {@link EventLoop}), a completion loop, and a
 * signal thread; the CM loop itself needs an rdma_cm event channel, so {@code BlockHoundIT} checks it on a
 * device.
 */
class LoopThreadTest {
    private static final Duration T = Duration.ofSeconds(10);

    /**
     * Runs {@code blocking} on the executor's thread.
     *
     * @return what it threw, or {@code null}
     * @throws TimeoutException when it did not return within {@link #T}: it blocked
     */
    private static Throwable on(Executor loop, Runnable blocking) throws Exception {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        loop.execute(() -> {
            try {
                blocking.run();
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        return outcome.get(T.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Every blocking call of Reactor's fails at once on the thread, which then goes on running tasks. */
    private static void refusesBlock(Executor loop, String thread) throws Exception {
        String refusal = "block()/blockFirst()/blockLast() are blocking, which is not supported in thread " + thread;
        Runnable[] blocking = {
            () -> Mono.never().block(),
            () -> Mono.delay(Duration.ofMillis(50)).block(),
            () -> Mono.never().block(Duration.ofSeconds(60)),
            () -> Flux.never().blockFirst(),
            () -> Flux.never().blockLast(),
        };
        for (Runnable b : blocking) {
            Throwable e = on(loop, b);
            assertEquals(refusal, assertInstanceOf(IllegalStateException.class, e).getMessage());
        }
        assertEquals(null, on(loop, () -> {
            assertInstanceOf(LoopThread.class, Thread.currentThread());
            assertTrue(Schedulers.isInNonBlockingThread(), "Reactor sees a non-blocking thread");
        }));
    }

    @Test
    void anEventLoopsThreadRefusesBlock() throws Exception {
        EventLoopTest.Idle loop = new EventLoopTest.Idle();
        try {
            refusesBlock(loop, "rdmaflux-test-loop");
        } finally {
            loop.shutdown();
        }
        loop.terminated().block(T);
    }

    @Test
    void aCompletionLoopsThreadRefusesBlock() throws Exception {
        CompletionLoop loop = new CompletionLoop("rdmaflux-test-completion-0", 0);
        try {
            refusesBlock(loop, "rdmaflux-test-completion-0");
        } finally {
            loop.shutdown();
        }
        loop.terminated().block(T);
    }

    @Test
    void aSignalThreadRefusesBlock() throws Exception {
        SignalScheduler signals = new SignalScheduler("rdmaflux-test", 1);
        try {
            refusesBlock(signals::schedule, "rdmaflux-test-signal-0");
        } finally {
            signals.dispose();
        }
    }
}
