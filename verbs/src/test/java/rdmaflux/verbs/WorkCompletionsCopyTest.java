package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

import rdmaflux.verbs.ffi.ibv_wc;

/** {@link WorkCompletions#copy}: one completion moved whole from a polled batch to another batch. */
class WorkCompletionsCopyTest {

    private static void write(WorkCompletions wc, int i, long wrId, int status, int qpNum, int bytes, int imm) {
        MemorySegment s = wc.segment().asSlice(ibv_wc.sizeof() * i, ibv_wc.sizeof());
        ibv_wc.wr_id(s, wrId);
        ibv_wc.status(s, status);
        ibv_wc.qp_num(s, qpNum);
        ibv_wc.byte_len(s, bytes);
        ibv_wc.imm_data(s, Integer.reverseBytes(imm));
        ibv_wc.wc_flags(s, 1 << 1);
    }

    @Test
    void copiesEveryFieldAndCoversTheTargetIndex() {
        WorkCompletions polled = new WorkCompletions(4);
        write(polled, 0, 11, 0, 100, 64, 7);
        write(polled, 1, 22, WcStatus.WR_FLUSH_ERR.value(), 200, 0, 9);
        polled.setCount(2);
        WorkCompletions inbox = new WorkCompletions(3);
        assertEquals(0, inbox.count());
        polled.copy(1, inbox, 0);
        polled.copy(0, inbox, 2);
        assertEquals(3, inbox.count());
        assertEquals(22, inbox.wrId(0));
        assertEquals(WcStatus.WR_FLUSH_ERR, inbox.status(0));
        assertEquals(200, inbox.qpNumber(0));
        assertEquals(11, inbox.wrId(2));
        assertTrue(inbox.isSuccess(2));
        assertEquals(100, inbox.qpNumber(2));
        assertEquals(64, inbox.byteLength(2));
        assertTrue(inbox.hasImmediate(2));
        assertEquals(7, inbox.immediateData(2));
        inbox.clear();
        assertEquals(0, inbox.count());
        assertThrows(IndexOutOfBoundsException.class, () -> inbox.wrId(0));
    }

    @Test
    void refusesIndicesOutsideEitherBatch() {
        WorkCompletions polled = new WorkCompletions(2);
        polled.setCount(1);
        WorkCompletions inbox = new WorkCompletions(2);
        assertThrows(IndexOutOfBoundsException.class, () -> polled.copy(1, inbox, 0)); // not polled
        assertThrows(IndexOutOfBoundsException.class, () -> polled.copy(0, inbox, 2)); // past the target
        assertThrows(IndexOutOfBoundsException.class, () -> polled.copy(0, inbox, -1));
        assertEquals(0, inbox.count());
    }
}
