package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The poller and the eventfd calls under it, on plain eventfds (no device): what a wait reports, and that
 * the waits and wake-ups an event loop makes per turn allocate nothing on the heap.
 */
class PollerTest {
    private final Poller poller = new Poller();
    private final int a = Posix.eventFd();
    private final int b = Posix.eventFd();

    @AfterEach
    void close() {
        poller.close();
        Posix.close(a);
        Posix.close(b);
    }

    @Test
    void reportsWhichDescriptorsAreReadable() {
        boolean[] ready = new boolean[2];
        assertFalse(poller.await(new int[] {a, b}, ready, 0), "nothing signalled");
        assertArrayEquals(new boolean[] {false, false}, ready);
        Posix.eventFdSignal(b);
        assertTrue(poller.await(new int[] {a, b}, ready, 1000));
        assertArrayEquals(new boolean[] {false, true}, ready);
        // The same descriptors in another order and another array: the readiness follows them.
        assertTrue(poller.await(new int[] {b, a}, ready, 1000));
        assertArrayEquals(new boolean[] {true, false}, ready);
        // Changed in place between waits, as a caller may: compared by content, not by identity.
        int[] fds = {a, b};
        poller.await(fds, ready, 0);
        fds[1] = a;
        fds[0] = b;
        assertTrue(poller.await(fds, ready, 0));
        assertArrayEquals(new boolean[] {true, false}, ready);
        // More descriptors than the kept array had room for, then fewer again.
        int[] many = {a, a, a, a, a, a, b};
        boolean[] manyReady = new boolean[many.length];
        assertTrue(poller.await(many, manyReady, 0));
        assertArrayEquals(new boolean[] {false, false, false, false, false, false, true}, manyReady);
        assertFalse(poller.await(new int[] {a}, ready, 0));
        assertFalse(ready[0]);
    }

    @Test
    void wakeupEndsAWaitAndIsConsumedByIt() throws Exception {
        boolean[] ready = new boolean[1];
        poller.wakeup();
        assertTrue(poller.await(new int[] {a}, ready, 1000), "a wake-up before the wait ends it at once");
        assertFalse(ready[0]);
        assertFalse(poller.await(new int[] {a}, ready, 0), "the wake-up was drained by the wait it ended");
        CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> poller.await(new int[0], new boolean[0], 30_000));
        Thread.sleep(100);
        poller.wakeup();
        assertTrue(waiting.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aSecondThreadWaitingAtTheSameTimeUsesAnArrayOfItsOwn() throws Exception {
        CompletableFuture<boolean[]> first = CompletableFuture.supplyAsync(() -> {
            boolean[] ready = new boolean[1];
            poller.await(new int[] {a}, ready, 30_000);
            return ready;
        });
        Thread.sleep(100);
        // The first thread is (very likely) in poll(2) on the kept array, watching a; this one watches b.
        boolean[] ready = new boolean[1];
        Posix.eventFdSignal(b);
        assertTrue(poller.await(new int[] {b}, ready, 30_000));
        assertTrue(ready[0]);
        assertFalse(first.isDone(), "b is not a descriptor of the first wait");
        Posix.eventFdSignal(a);
        assertArrayEquals(new boolean[] {true}, first.get(30, TimeUnit.SECONDS));
    }

    @Test
    void misuseIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> poller.await(new int[] {a, b}, new boolean[1], 0));
        poller.close();
        assertDoesNotThrow(poller::close, "idempotent");
        assertDoesNotThrow(poller::wakeup, "a wake-up after close does nothing");
        assertThrows(IllegalStateException.class, () -> poller.await(new int[] {a}, new boolean[1], 0));
    }

    @Test
    void aWaitOnAReadyDescriptorAllocatesNothing() {
        Posix.eventFdSignal(a);
        int[] fds = {a, b};
        boolean[] ready = new boolean[2];
        int[] seen = new int[1];
        AllocationProbe.assertNoSteadyAllocation("10000 waits on a readable eventfd", () -> {
            for (int i = 0; i < 10_000; i++) {
                if (poller.await(fds, ready, -1) && ready[0]) {
                    seen[0]++;
                }
            }
        });
        assertTrue(seen[0] >= 10_000);
    }

    @Test
    void aWakeupAndTheWaitItEndsAllocateNothing() {
        int[] fds = {a};
        boolean[] ready = new boolean[1];
        int[] woken = new int[1];
        AllocationProbe.assertNoSteadyAllocation("10000 wake-ups, each ending a wait", () -> {
            for (int i = 0; i < 10_000; i++) {
                poller.wakeup();
                if (poller.await(fds, ready, -1)) {
                    woken[0]++;
                }
            }
        });
        assertTrue(woken[0] >= 10_000);
    }

    @Test
    void eventFdSignalDrainAndSingleWaitAllocateNothing() {
        int[] hits = new int[1];
        AllocationProbe.assertNoSteadyAllocation("10000 eventfd signal, poll and drain rounds", () -> {
            for (int i = 0; i < 10_000; i++) {
                Posix.eventFdSignal(a);
                if (Posix.pollIn(a, -1)) {
                    hits[0]++;
                }
                Posix.eventFdDrain(a);
            }
        });
        assertTrue(hits[0] >= 10_000);
        assertFalse(Posix.pollIn(a, 0), "drained");
        assertEquals(0, Posix.poll(Posix.pollFds(java.lang.foreign.Arena.ofAuto(), new int[] {a, b}), 2, 0));
    }
}
