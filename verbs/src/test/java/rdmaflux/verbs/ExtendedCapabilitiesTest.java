package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;

import org.junit.jupiter.api.Test;

/** When {@code createExtendedQueuePair} refuses send operations the device does not report. */
class ExtendedCapabilitiesTest {
    private static final int ATOMIC_WRITE = SendOp.ATOMIC_WRITE.value();
    private static final int OTHERS = NativeConstant.mask(EnumSet.complementOf(EnumSet.of(SendOp.ATOMIC_WRITE)));

    @Test
    void atomicWriteNeedsBit40() {
        assertEquals(1L << 40, ExtendedCapabilities.ATOMIC_WRITE);
        RdmaUnsupportedException e = assertThrows(RdmaUnsupportedException.class,
                () -> ExtendedCapabilities.checkSendOps(ATOMIC_WRITE | SendOp.SEND.value(), 0xffff_ffffL, "rxe0"));
        assertEquals(Errno.EOPNOTSUPP, e.errno());
        assertEquals("ibv_create_qp_ex", e.operation());
        assertTrue(e.getMessage().contains("rxe0") && e.getMessage().contains("ATOMIC WRITE"), e::getMessage);
        assertDoesNotThrow(() -> ExtendedCapabilities.checkSendOps(ATOMIC_WRITE, 1L << 40, "rxe0"));
    }

    @Test
    void otherOperationsAreLeftToTheProvider() {
        assertDoesNotThrow(() -> ExtendedCapabilities.checkSendOps(OTHERS, 0, "rxe0"));
        // Bits next to 40 (FLUSH_GLOBAL 38, FLUSH_PERSISTENT 39) do not stand in for it.
        assertThrows(RdmaUnsupportedException.class,
                () -> ExtendedCapabilities.checkSendOps(ATOMIC_WRITE, (1L << 38) | (1L << 39) | (1L << 41), "rxe0"));
    }
}
