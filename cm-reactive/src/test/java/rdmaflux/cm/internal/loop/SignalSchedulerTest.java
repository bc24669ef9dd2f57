package rdmaflux.cm.internal.loop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

public class SignalSchedulerTest {
    private static final Duration T = Duration.ofSeconds(30);

    private final SignalScheduler scheduler = new SignalScheduler("rdmaflux-test", 2);

    @AfterEach
    void dispose() {
        scheduler.dispose();
    }

    private static void await(CountDownLatch latch) throws InterruptedException {
        assertTrue(latch.await(T.toMillis(), TimeUnit.MILLISECONDS), "timed out");
    }

    /**
     * A task that holds the worker's thread until released, so that what is scheduled behind it waits.
     *
     * @return counted down to release the thread
     */
    public static CountDownLatch occupy(Scheduler.Worker w) throws InterruptedException {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        w.schedule(() -> {
            running.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        await(running);
        return release;
    }

    @Test
    void aWorkersTasksRunInOrderOnOneNonBlockingSignalThread() throws InterruptedException {
        Scheduler.Worker w = scheduler.createWorker();
        int n = 10_000;
        List<Integer> order = new ArrayList<>();
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        CountDownLatch done = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            int k = i;
            w.schedule(() -> {
                order.add(k);
                threads.add(Thread.currentThread());
                done.countDown();
            });
        }
        await(done);
        assertEquals(n, order.size());
        for (int i = 0; i < n; i++) {
            assertEquals(i, order.get(i));
        }
        assertEquals(1, threads.size());
        Thread t = threads.iterator().next();
        assertTrue(t.getName().startsWith("rdmaflux-test-signal-"), t.getName());
        assertInstanceOf(reactor.core.scheduler.NonBlocking.class, t);
        w.dispose();
    }

    /** Reactor refuses to block on a non-blocking thread: a blocking call in user code fails instead of stalling. */
    @Test
    void blockingOnASignalThreadFails() throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        scheduler.schedule(() -> {
            try {
                Mono.never().block(Duration.ofSeconds(1));
            } catch (Throwable e) {
                failure.set(e);
            }
            done.countDown();
        });
        await(done);
        assertInstanceOf(IllegalStateException.class, failure.get());
    }

    @Test
    void publishOnDeliversEverythingInOrderWithBackpressure() {
        int n = 200_000;
        StepVerifier.create(Flux.range(0, n).publishOn(scheduler, 32)
                        .reduce(0, (expected, v) -> {
                            if (v.intValue() != expected.intValue()) {
                                throw new AssertionError("got " + v + ", expected " + expected);
                            }
                            return expected + 1;
                        }))
                .expectNext(n)
                .expectComplete()
                .verify(T);
        StepVerifier.create(Flux.range(0, 1_000).publishOn(scheduler, 8), 0)
                .thenRequest(3).expectNext(0, 1, 2)
                .thenRequest(Long.MAX_VALUE).expectNextCount(997)
                .expectComplete()
                .verify(T);
    }

    /**
     * The hop {@code receive()} makes for each message: a task that schedules its successor once it runs, as
     * {@code publishOn}'s drain does. After a warm-up, a chain of hops allocates nothing on the signal thread.
     */
    @Test
    void aWorkerScheduledAgainAfterItsTaskStartedAllocatesNothing() throws InterruptedException {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        Scheduler.Worker w = scheduler.createWorker();
        int hops = 200_000;
        Chain warmUp = new Chain(w, hops);
        warmUp.start();
        await(warmUp.done);
        Thread signal = warmUp.thread;
        long before = mx.getThreadAllocatedBytes(signal.threadId());
        Chain measured = new Chain(w, hops);
        measured.start();
        await(measured.done);
        long after = mx.getThreadAllocatedBytes(signal.threadId());
        assertEquals(signal, measured.thread, "a worker's tasks run on one thread");
        // Under one byte per hop: the chain itself allocates nothing; a few bytes of JIT bookkeeping may land.
        assertTrue(after - before < hops, (after - before) + " bytes allocated by " + hops + " hops");
        w.dispose();
    }

    /** Runs {@code left} times, each run scheduling the next on the same worker. */
    private static final class Chain implements Runnable {
        private final Scheduler.Worker worker;
        private int left;
        volatile Thread thread;
        final CountDownLatch done = new CountDownLatch(1);

        Chain(Scheduler.Worker worker, int hops) {
            this.worker = worker;
            this.left = hops;
        }

        void start() {
            worker.schedule(this);
        }

        @Override
        public void run() {
            if (thread == null) {
                thread = Thread.currentThread();
            }
            if (--left > 0) {
                worker.schedule(this);
            } else {
                done.countDown();
            }
        }
    }

    @Test
    void aDisposedWorkerRunsNothingPendingAndRefusesMore() throws InterruptedException {
        Scheduler.Worker w = scheduler.createWorker();
        CountDownLatch release = occupy(w);
        AtomicInteger ran = new AtomicInteger();
        w.schedule(ran::incrementAndGet);
        w.schedule(ran::incrementAndGet);
        // A task that can say it is cancelled but is not: dropped too (only a cancelled one still runs).
        class Live implements Runnable, reactor.core.Scannable {
            @Override
            public void run() {
                ran.incrementAndGet();
            }

            @Override
            public Object scanUnsafe(Attr key) {
                return key == Attr.CANCELLED ? Boolean.FALSE : null;
            }
        }
        w.schedule(new Live());
        w.dispose();
        assertTrue(w.isDisposed());
        release.countDown();
        // Something scheduled after, on the same thread's queue through another worker, shows the queue ran.
        Scheduler.Worker other = scheduler.createWorker();
        Scheduler.Worker sameThread = scheduler.createWorker(); // two threads: every other worker shares one
        CountDownLatch after = new CountDownLatch(2);
        other.schedule(after::countDown);
        sameThread.schedule(after::countDown);
        await(after);
        assertEquals(0, ran.get());
        assertThrows(RejectedExecutionException.class, () -> w.schedule(ran::incrementAndGet));
        other.dispose();
        sameThread.dispose();
    }

    @Test
    void anUndelayedTaskDisposedBeforeItStartsNeverRuns() throws InterruptedException {
        Scheduler.Worker w = scheduler.createWorker();
        CountDownLatch release = occupy(w);
        AtomicInteger ran = new AtomicInteger();
        Disposable first = w.schedule(ran::incrementAndGet);  // the worker's reusable carrier
        Disposable second = w.schedule(ran::incrementAndGet); // a task of its own
        first.dispose();
        second.dispose();
        CountDownLatch after = new CountDownLatch(1);
        w.schedule(after::countDown);
        release.countDown();
        await(after);
        assertEquals(0, ran.get());
        w.dispose();
    }

    @Test
    void delayedAndPeriodicTasksRunOnTheSignalThreadsAndStopWhenDisposed() throws InterruptedException {
        Set<String> ranOn = ConcurrentHashMap.newKeySet();
        CountDownLatch delayed = new CountDownLatch(1);
        long t0 = System.nanoTime();
        scheduler.schedule(() -> {
            ranOn.add(Thread.currentThread().getName());
            delayed.countDown();
        }, 50, TimeUnit.MILLISECONDS);
        await(delayed);
        assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(50), "ran before its delay");
        AtomicInteger cancelledRan = new AtomicInteger();
        Scheduler.Worker w = scheduler.createWorker();
        w.schedule(cancelledRan::incrementAndGet, 200, TimeUnit.MILLISECONDS).dispose();
        CountDownLatch ticks = new CountDownLatch(3);
        AtomicInteger periodic = new AtomicInteger();
        Disposable p = w.schedulePeriodically(() -> {
            ranOn.add(Thread.currentThread().getName());
            periodic.incrementAndGet();
            ticks.countDown();
        }, 0, 20, TimeUnit.MILLISECONDS);
        await(ticks);
        p.dispose();
        Thread.sleep(400); // past the cancelled task's delay, and many periods
        int stopped = periodic.get();
        Thread.sleep(100);
        assertEquals(stopped, periodic.get(), "a disposed periodic task kept running");
        assertEquals(0, cancelledRan.get());
        for (String name : ranOn) {
            assertTrue(name.startsWith("rdmaflux-test-signal-"), name);
        }
        w.dispose();
    }

    @Test
    void delayedTasksOutliveReactorsSharedSchedulersAndTheTimerEndsWithTheThreads() throws InterruptedException {
        CountDownLatch ran = new CountDownLatch(2);
        scheduler.schedule(ran::countDown, 100, TimeUnit.MILLISECONDS);
        Scheduler.Worker w = scheduler.createWorker();
        Disposable periodic = w.schedulePeriodically(ran::countDown, 100, 10_000, TimeUnit.MILLISECONDS);
        // What rsocket-test's kit does for every transport pair: Reactor's cached schedulers end, with their timers.
        Schedulers.shutdownNow();
        await(ran);
        periodic.dispose();
        Thread[] threads = scheduler.threads();
        assertEquals("rdmaflux-test-signal-timer", threads[threads.length - 1].getName());
        scheduler.dispose();
        assertThrows(RejectedExecutionException.class, () -> scheduler.schedule(() -> { }, 1, TimeUnit.SECONDS));
        StepVerifier.create(scheduler.disposeGracefully()).expectComplete().verify(T);
        for (Thread t : threads) {
            assertFalse(t.isAlive(), t.getName() + " still alive");
        }
    }

    @Test
    void disposeRunsWhatIsQueuedThenEndsTheThreadsAndRefusesMore() throws InterruptedException {
        Scheduler.Worker w = scheduler.createWorker();
        CountDownLatch release = occupy(w);
        AtomicInteger ran = new AtomicInteger();
        for (int i = 0; i < 100; i++) {
            scheduler.schedule(ran::incrementAndGet);
        }
        scheduler.dispose();
        assertTrue(scheduler.isDisposed());
        assertThrows(RejectedExecutionException.class, () -> scheduler.schedule(ran::incrementAndGet));
        release.countDown();
        StepVerifier.create(scheduler.disposeGracefully()).expectComplete().verify(T);
        for (Thread t : scheduler.threads()) {
            assertFalse(t.isAlive(), t.getName() + " still alive");
        }
        assertEquals(100, ran.get());
    }

    /**
     * reactor-core#4396: {@code publishOn} cancelled while its drain is scheduled but not started disposes
     * its worker, which drops the drain, and leaves the discard of its queue to that drain. On the signal
     * threads the drain still runs, only to discard: a receive buffer or credit per element depends on it.
     * Both of {@code publishOn}'s queue modes: fused with a unicast sink's queue (the datagram inboxes) and
     * its own queue.
     */
    @Test
    void publishOnCancelledWithItsDrainPendingStillDiscardsWhatItHolds() throws InterruptedException {
        SignalScheduler one = new SignalScheduler("rdmaflux-test-one", 1);
        try {
            for (boolean fused : new boolean[] {true, false}) {
                CountDownLatch release = occupy(one.createWorker());
                reactor.core.publisher.Sinks.Many<Integer> source =
                        reactor.core.publisher.Sinks.many().unicast().onBackpressureBuffer();
                List<Integer> discarded = new java.util.concurrent.CopyOnWriteArrayList<>();
                List<Integer> received = new java.util.concurrent.CopyOnWriteArrayList<>();
                Flux<Integer> in = fused ? source.asFlux() : source.asFlux().hide();
                Disposable d = in.publishOn(one, 8)
                        .doOnDiscard(Integer.class, discarded::add)
                        .subscribe(received::add);
                for (int i = 0; i < 5; i++) {
                    source.tryEmitNext(i); // the drain is scheduled behind the occupying task
                }
                d.dispose();
                release.countDown();
                long deadline = System.nanoTime() + T.toNanos();
                while (discarded.size() < 5 && System.nanoTime() < deadline) {
                    Thread.sleep(1);
                }
                assertEquals(List.of(0, 1, 2, 3, 4), discarded, fused ? "fused" : "own queue");
                assertEquals(List.of(), received);
            }
        } finally {
            one.dispose();
        }
    }
}
