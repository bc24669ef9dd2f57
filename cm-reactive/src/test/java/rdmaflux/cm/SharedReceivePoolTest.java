package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SharedReceivePoolTest {

    @Test
    void valuesAndCapacity() {
        SharedReceivePool p = SharedReceivePool.of(6_124, 2).withReserve(1_024, 8);
        assertEquals(6_124, p.buffers());
        assertEquals(2, p.quota());
        assertEquals(1_024, p.reserve());
        assertEquals(8, p.loanCap());
        assertEquals(1_020, p.capacity());
        assertEquals(p, SharedReceivePool.of(6_124, 2).withReserve(1_024, 8));
        assertEquals(0, SharedReceivePool.of(10, 1).reserve());
    }

    @Test
    void outOfRangeValuesSayWhatIsNeeded() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SharedReceivePool.of(4, 2));
        assertTrue(e.getMessage().contains("at least reserve + quota + 3 control = 5"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SharedReceivePool.of(100, 0));
        assertThrows(IllegalArgumentException.class, () -> SharedReceivePool.of(100, 0x8000));
        assertThrows(IllegalArgumentException.class, () -> SharedReceivePool.of(100, 2).withReserve(10, 11));
        assertThrows(IllegalArgumentException.class, () -> SharedReceivePool.of(100, 2).withReserve(-1, 0));
        assertThrows(IllegalArgumentException.class, () -> SharedReceivePool.of(100, 2).withReserve(96, 1));
    }

    @Test
    void serverOptionsCarryThePool() {
        SharedReceivePool p = SharedReceivePool.of(100, 2);
        ServerOptions o = ServerOptions.builder().sharedReceivePool(p).acceptQueue(7).build();
        assertEquals(p, o.sharedReceivePool().orElseThrow());
        assertEquals(7, o.acceptQueue());
        assertTrue(ServerOptions.defaults().sharedReceivePool().isEmpty());
        assertTrue(o.toBuilder().sharedReceivePool(null).build().sharedReceivePool().isEmpty());
    }
}
