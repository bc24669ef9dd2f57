package rdmaflux.cm.internal.cq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/**
 * When a removed device's resources close ({@link DeviceHolders}): once, when the removal has been heard of and
 * the last holder let go, whatever the order; never while a connection, endpoint or group still holds them.
 */
class DeviceHoldersTest {

    @Test
    void aRemovalWithNothingOnTheDeviceClosesAtOnceAndOnlyOnce() {
        DeviceHolders h = new DeviceHolders();
        assertTrue(h.remove());
        assertFalse(h.remove(), "a second DEVICE_REMOVAL (another id's) closes nothing more");
        assertFalse(h.hold(), "nothing may hold a removed device's resources");
        assertEquals(0, h.holders());
    }

    @Test
    void theLastHolderAfterTheRemovalClosesThem() {
        DeviceHolders h = new DeviceHolders();
        assertTrue(h.hold());
        assertTrue(h.hold());
        assertFalse(h.remove(), "two connections are still tearing down");
        assertFalse(h.release());
        assertTrue(h.release(), "the last one's teardown ended");
    }

    @Test
    void holdersComingAndGoingWithoutARemovalCloseNothing() {
        DeviceHolders h = new DeviceHolders();
        for (int i = 0; i < 5; i++) {
            assertTrue(h.hold());
            assertFalse(h.release(), "a device still there keeps its resources for the next connection");
        }
        assertTrue(h.remove(), "removed later, with nothing on it");
    }

    @Test
    void releasingMoreThanWasHeldIsADefect() {
        DeviceHolders h = new DeviceHolders();
        assertThrows(IllegalStateException.class, h::release);
    }

    @Test
    void anyOrderClosesExactlyOnceAfterTheRemovalAndTheLastRelease() {
        RandomCases.run(2_000, r -> {
            DeviceHolders h = new DeviceHolders();
            int held = 0;
            int closes = 0;
            boolean removed = false;
            int steps = 1 + r.nextInt(40);
            for (int i = 0; i < steps; i++) {
                int op = r.nextInt(3);
                if (op == 0) {
                    boolean ok = h.hold();
                    assertEquals(!removed, ok, "hold after removal must be refused, before it granted");
                    held += ok ? 1 : 0;
                } else if (op == 1 && held > 0) {
                    held--;
                    boolean close = h.release();
                    assertEquals(removed && held == 0 && closes == 0, close);
                    closes += close ? 1 : 0;
                } else {
                    boolean close = h.remove();
                    assertEquals(held == 0 && closes == 0, close);
                    removed = true;
                    closes += close ? 1 : 0;
                }
                assertEquals(held, h.holders());
                assertTrue(closes <= 1, "closed twice");
            }
            // Whatever happened, the removal and every release together close them exactly once.
            closes += h.remove() ? 1 : 0;
            for (; held > 0; held--) {
                closes += h.release() ? 1 : 0;
            }
            closes += h.remove() ? 1 : 0;
            assertEquals(1, closes);
        });
    }
}
