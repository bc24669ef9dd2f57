package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The hand-over of deferred work to the lock's holder, and the slot's one-shot release it serves. */
class ConnectionLockTest {

    /** Deferred work: items offered from any thread, counted by whoever holds the lock. */
    private static final class Work implements ConnectionLock.Deferred {
        final ConcurrentLinkedQueue<Integer> offered = new ConcurrentLinkedQueue<>();
        final AtomicInteger done = new AtomicInteger();
        final AtomicReference<Thread> lastRunner = new AtomicReference<>();
        ConnectionLock lock;

        @Override
        public boolean pending() {
            return !offered.isEmpty();
        }

        final AtomicInteger after = new AtomicInteger();
        final AtomicInteger afterUnderLock = new AtomicInteger();

        @Override
        public boolean beforeUnlock() {
            assertTrue(lock.isHeldByCurrentThread(), "deferred work runs under the lock");
            lastRunner.set(Thread.currentThread());
            boolean any = false;
            while (offered.poll() != null) {
                done.incrementAndGet();
                any = true;
            }
            return any;
        }

        @Override
        public void afterUnlock() {
            after.incrementAndGet();
            if (lock.isHeldByCurrentThread()) {
                afterUnderLock.incrementAndGet();
            }
        }
    }

    private static Work work(ConnectionLock lock) {
        Work w = new Work();
        w.lock = lock;
        lock.deferred(w);
        return w;
    }

    @Test
    void aFreeLockLetsTheOfferingThreadDoTheWork() {
        ConnectionLock lock = new ConnectionLock();
        Work w = work(lock);
        w.offered.add(1);
        lock.offer();
        assertEquals(1, w.done.get());
        assertSame(Thread.currentThread(), w.lastRunner.get());
        assertFalse(lock.isLocked());
        assertEquals(1, w.after.get(), "what the hold left for after the unlock ran once");
        assertEquals(0, w.afterUnderLock.get(), "and not under the lock");
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void anOfferNeverWaitsForTheHolderWhoDoesTheWorkBeforeLettingGo() throws InterruptedException {
        ConnectionLock lock = new ConnectionLock();
        Work w = work(lock);
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            lock.lock();
            try {
                held.countDown();
                letGo.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                lock.unlock();
            }
        }, "holder");
        holder.start();
        held.await();
        w.offered.add(1);
        lock.offer(); // returns although the lock is held
        assertEquals(0, w.done.get(), "the holder has not let go yet");
        letGo.countDown();
        holder.join();
        assertEquals(1, w.done.get());
        assertSame(holder, w.lastRunner.get());
    }

    @Test
    void anIdleUnlockDoesTheWorkOnlyWhenSomeWasOffered() {
        ConnectionLock lock = new ConnectionLock();
        Work w = work(lock);
        lock.lock();
        lock.unlockIdle();
        assertFalse(lock.isLocked());
        assertEquals(null, w.lastRunner.get(), "nothing offered: the deferred work is not called");
        assertEquals(0, w.after.get());

        lock.lock();
        w.offered.add(1); // as a thread that found the lock held would
        lock.unlockIdle();
        assertFalse(lock.isLocked());
        assertEquals(1, w.done.get(), "offered during the hold: done before letting go");
        assertEquals(1, w.after.get());

        lock.lock();
        lock.lock();
        w.offered.add(2);
        lock.unlockIdle();
        assertTrue(lock.isHeldByCurrentThread(), "an inner hold lets go of one level only");
        assertEquals(1, w.done.get(), "and leaves the work to the outermost unlock");
        lock.unlockIdle();
        assertFalse(lock.isLocked());
        assertEquals(2, w.done.get());
    }

    @Test
    void onlyTheOutermostUnlockDoesTheWork() {
        ConnectionLock lock = new ConnectionLock();
        Work w = work(lock);
        lock.lock();
        lock.lock();
        w.offered.add(1);
        lock.offer(); // reentrant: taken and let go at depth 3, nothing done yet
        lock.unlock();
        assertEquals(0, w.done.get());
        lock.unlock();
        assertEquals(1, w.done.get());
        assertFalse(lock.isLocked());
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void noOfferIsLostWhileThreadsRaceForTheLock() throws InterruptedException {
        ConnectionLock lock = new ConnectionLock();
        Work w = work(lock);
        int threads = 4;
        int each = 20_000;
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            boolean holds = t % 2 == 0; // half of them also take the lock as senders do
            ts[t] = new Thread(() -> {
                for (int i = 0; i < each; i++) {
                    w.offered.add(i);
                    if (holds && (i & 7) == 0) {
                        lock.lock();
                        lock.unlock();
                    } else {
                        lock.offer();
                    }
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        assertEquals(threads * each, w.done.get(), "every offered item was done by some holder");
        assertEquals(0, w.afterUnderLock.get());
        assertFalse(w.pending());
        assertFalse(lock.isLocked());
    }

    @Test
    void aDeliveryIsTakenBackOnceAndAStaleViewNeverTakesANewerOne() {
        try (Arena arena = Arena.ofConfined()) {
            ReceiveSlot slot = new ReceiveSlot(null, 0, arena.allocate(16));
            slot.deliver(4, false, 0, true);
            int first = slot.generation();
            assertTrue(slot.isLent(first));
            assertTrue(slot.take(first));
            assertFalse(slot.take(first), "a second release of the same delivery does nothing");
            assertFalse(slot.isLent(first), "a released message reads as released at once");
            assertEquals(ReceiveSlot.RELEASING, slot.state());
            slot.state(ReceiveSlot.POSTED); // reposted by the lock's holder
            slot.deliver(8, false, 0, true);
            assertFalse(slot.take(first), "a stale view cannot release the newer message");
            assertTrue(slot.isLent(first + 1));
            assertTrue(slot.take(first + 1));
        }
    }
}
