package rdmaflux.cm.internal.rc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SharedCreditsTest {

    @Test
    void capacityIsTheBuffersBeyondTheReserveOverQuotaPlusControl() {
        SharedCredits pool = new SharedCredits(100, 4, 3, 30, 10);
        assertEquals(10, pool.capacity());
        for (int i = 0; i < 10; i++) {
            assertNotNull(pool.join());
        }
        assertNull(pool.join(), "an eleventh connection would not have its quota");
        assertEquals(10, pool.members());
    }

    @Test
    void outOfRangeValuesAreRefusedWithWhatIsNeeded() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SharedCredits(10, 4, 3, 8, 2));
        assertTrue(e.getMessage().contains("buffers >= reserve + quota + control"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new SharedCredits(100, 0, 3, 8, 2));
        assertThrows(IllegalArgumentException.class, () -> new SharedCredits(100, 4, 3, 8, 9));
        assertThrows(IllegalArgumentException.class, () -> new SharedCredits(100, 4, -1, 8, 2));
    }

    @Test
    void loansStopAtTheCapAndAtTheReserve() {
        SharedCredits pool = new SharedCredits(20, 2, 3, 5, 3);
        SharedCredits.Member a = pool.join();
        SharedCredits.Member b = pool.join();
        for (int i = 0; i < 4; i++) {
            pool.landed(a);
        }
        assertTrue(pool.lend(a));
        assertTrue(pool.lend(a));
        assertTrue(pool.lend(a));
        assertFalse(pool.lend(a), "the cap is 3");
        for (int i = 0; i < 3; i++) {
            pool.landed(b);
        }
        assertTrue(pool.lend(b));
        assertTrue(pool.lend(b));
        assertFalse(pool.lend(b), "the reserve of 5 is lent out");
        assertEquals(5, pool.lent());
        pool.reposted(a, true);
        assertEquals(4, pool.lent());
        assertTrue(pool.lend(b), "a repaid loan is lent again");
        assertEquals(20 - 6, pool.posted());
    }

    @Test
    void aLoanNeedsAHeldUnlentBuffer() {
        SharedCredits pool = new SharedCredits(20, 2, 3, 5, 5);
        SharedCredits.Member a = pool.join();
        assertFalse(pool.lend(a));
        pool.landed(a);
        assertTrue(pool.lend(a));
        assertFalse(pool.lend(a));
        assertThrows(IllegalStateException.class, () -> pool.reposted(a, false), "the only buffer held is lent");
        pool.reposted(a, true);
        assertThrows(IllegalStateException.class, () -> pool.reposted(a, true));
    }

    @Test
    void aMemberThatLeftCountsUntilItsBuffersAreBackAndBorrowsNoMore() {
        SharedCredits pool = new SharedCredits(10, 2, 3, 0, 0);
        SharedCredits.Member a = pool.join();
        SharedCredits.Member b = pool.join();
        assertNull(pool.join());
        pool.landed(a);
        pool.leave(a);
        pool.leave(a);
        assertFalse(pool.lend(a));
        assertNull(pool.join(), "a's buffer is still held by its application");
        pool.reposted(a, false);
        assertEquals(1, pool.members());
        assertNotNull(pool.join());
        pool.leave(b);
        assertEquals(1, pool.members());
    }
}
