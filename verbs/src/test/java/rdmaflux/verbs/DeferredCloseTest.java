package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.ffi.ibv_mr;
import rdmaflux.verbs.ffi.ibv_mw;

/**
 * A close under work leases: at once for new uses, the destroy when the last lease is given back. Memory
 * windows of the {@link FakeProvider} can be destroyed for real (its {@code dealloc_mw} is a no-op), so they
 * stand for every object a request can hold; the device's side is {@code MisuseIT}.
 */
class DeferredCloseTest {
    private static final AccessFlags READ = AccessFlags.of(AccessFlag.REMOTE_READ);

    private final FakeProvider fake = new FakeProvider(1, 1);
    private final Arena arena = Arena.ofAuto();

    private MemoryWindow window(MemoryWindowType type) {
        MemorySegment mw = ibv_mw.allocate(arena);
        ibv_mw.type(mw, type.value());
        ibv_mw.context(mw, fake.qp.protectionDomain().context().handle);
        return new MemoryWindow(fake.qp.protectionDomain(), mw, type);
    }

    private MemoryRegion bindableRegion() {
        MemorySegment mr = ibv_mr.allocate(arena);
        return new MemoryRegion(fake.qp.protectionDomain(), mr, arena.allocate(4096, 4096),
                AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ, AccessFlag.MW_BIND));
    }

    @Test
    void aCloseUnderAWorkLeaseDestroysWhenTheLeaseIsGivenBack() {
        MemoryWindow w = window(MemoryWindowType.TYPE_1);
        w.acquireWork();
        w.close();
        assertTrue(w.isClosed());
        assertFalse(w.isDestroyed(), "a request still uses it");
        assertThrows(IllegalStateException.class, w::acquireWork, "no new use");
        assertThrows(IllegalStateException.class, w::rkey);
        assertEquals(1, w.workLeaseCount());
        w.close(); // idempotent, still deferred
        assertFalse(w.isDestroyed());
        w.releaseWork();
        assertTrue(w.isDestroyed());

        MemoryWindow unused = window(MemoryWindowType.TYPE_1);
        unused.close();
        assertTrue(unused.isDestroyed(), "no lease: destroyed at once");
    }

    @Test
    void aWindowClosedUnderItsBindIsDeallocatedByTheBindsCompletion() {
        MemoryRegion region = bindableRegion();
        MemoryWindow w = window(MemoryWindowType.TYPE_2);
        SendRequests bind = new SendRequests(1, 1);
        bind.set(0, 5, SendOpcode.BIND_MW, SendFlag.mask(SendFlag.SIGNALED)).bindWindow(0, w, region, 0, 64, READ);
        fake.qp.postSend(bind, 1);
        assertEquals(1, region.boundWindowCount());
        w.close();
        assertFalse(w.isDestroyed());
        assertEquals(1, region.boundWindowCount(), "the closed window still holds its region");
        fake.complete(5, WcOpcode.BIND_MW);
        assertTrue(w.isDestroyed());
        assertEquals(0, region.boundWindowCount());
        assertEquals(0, region.workLeaseCount());
    }

    @Test
    void aQpResetEndsItsRequests() {
        MemoryRegion region = bindableRegion();
        MemoryWindow w = window(MemoryWindowType.TYPE_2);
        SendRequests bind = new SendRequests(1, 1);
        bind.set(0, 6, SendOpcode.BIND_MW, 0).bindWindow(0, w, region, 0, 64, READ);
        fake.qp.postSend(bind, 1);
        ReceiveRequests receive = new ReceiveRequests(1, 1).set(0, 7).sge(0, 0, region, 0, 64);
        fake.qp.postReceive(receive, 1);
        w.close();
        assertEquals(2, region.workLeaseCount());
        // What modifyToReset and the QP's destroy do after their native call (which the fake cannot take).
        fake.qp.retireAll();
        assertTrue(w.isDestroyed());
        assertEquals(0, region.workLeaseCount());
        assertEquals(0, fake.qp.outstandingSends());
        assertEquals(0, fake.qp.outstandingReceives());
    }

    @Test
    void racingLeasesAndACloseDestroyOnceAndOnlyAfterTheLastLease() throws Exception {
        for (int round = 0; round < 200; round++) {
            MemoryWindow w = window(MemoryWindowType.TYPE_1);
            int threads = 3;
            CountDownLatch start = new CountDownLatch(1);
            AtomicInteger early = new AtomicInteger();
            Thread[] workers = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                workers[t] = new Thread(() -> {
                    try {
                        start.await();
                        for (;;) {
                            w.acquireWork();
                            if (w.isDestroyed()) {
                                early.incrementAndGet();
                            }
                            Thread.onSpinWait();
                            w.releaseWork();
                        }
                    } catch (IllegalStateException closed) {
                        // the close won: no more leases
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                workers[t].start();
            }
            start.countDown();
            Thread.sleep(0, 50_000);
            w.close();
            for (Thread t : workers) {
                t.join(10_000);
                assertFalse(t.isAlive());
            }
            assertEquals(0, early.get(), "a lease saw the window destroyed");
            assertTrue(w.isDestroyed(), "round " + round);
            assertEquals(0, w.workLeaseCount());
        }
    }
}
