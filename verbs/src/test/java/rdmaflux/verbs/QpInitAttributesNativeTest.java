package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import rdmaflux.verbs.ffi.ibv_qp_cap;
import rdmaflux.verbs.ffi.ibv_qp_init_attr;
import rdmaflux.verbs.ffi.ibv_qp_init_attr_ex;

/**
 * The queue pair attributes' bulk encoding ({@link NativeImage}) against the jextract accessors of
 * {@code struct ibv_qp_init_attr}: what one writes, the other must read, field by field.
 */
class QpInitAttributesNativeTest {

    @Test
    void writeProducesTheStructTheAccessorsRead() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ibv_qp_init_attr.layout());
            s.fill((byte) 0x5A); // garbage the write must replace
            QpInitAttributes.write(s, 0x1111_2222_3333_4440L, 0x5555_6666_7777_8880L, 0, QpType.RC.value(), true,
                    128, 64, 2, 1, 220);
            assertEquals(0L, ibv_qp_init_attr.qp_context(s).address());
            assertEquals(0x1111_2222_3333_4440L, ibv_qp_init_attr.send_cq(s).address());
            assertEquals(0x5555_6666_7777_8880L, ibv_qp_init_attr.recv_cq(s).address());
            assertEquals(0L, ibv_qp_init_attr.srq(s).address());
            MemorySegment cap = ibv_qp_init_attr.cap(s);
            assertEquals(128, ibv_qp_cap.max_send_wr(cap));
            assertEquals(64, ibv_qp_cap.max_recv_wr(cap));
            assertEquals(2, ibv_qp_cap.max_send_sge(cap));
            assertEquals(1, ibv_qp_cap.max_recv_sge(cap));
            assertEquals(220, ibv_qp_cap.max_inline_data(cap));
            assertEquals(QpType.RC.value(), ibv_qp_init_attr.qp_type(s));
            assertEquals(1, ibv_qp_init_attr.sq_sig_all(s));
        }
    }

    @Test
    void grantedCapacitiesReadWhatTheProviderWroteBack() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ibv_qp_init_attr.layout());
            s.fill((byte) 0x7F);
            MemorySegment cap = ibv_qp_init_attr.cap(s);
            ibv_qp_cap.max_send_wr(cap, 255);
            ibv_qp_cap.max_recv_wr(cap, 1 << 20);
            ibv_qp_cap.max_send_sge(cap, 3);
            ibv_qp_cap.max_recv_sge(cap, 4);
            ibv_qp_cap.max_inline_data(cap, 0x7FFF_FFFF);
            assertArrayEquals(new int[] {255, 1 << 20, 3, 4, 0x7FFF_FFFF}, QpInitAttributes.grantedCapacities(s));
        }
    }

    /** The extended struct begins with the classic one, and the write stops before its {@code comp_mask}. */
    @Test
    void theWriteLeavesTheExtendedStructsOwnFieldsAlone() {
        assertTrue(QpInitAttributes.Layout.WRITTEN <= ibv_qp_init_attr.sizeof());
        assertTrue(QpInitAttributes.Layout.WRITTEN <= ibv_qp_init_attr_ex.comp_mask$offset());
        assertEquals(ibv_qp_init_attr.sq_sig_all$offset(), ibv_qp_init_attr_ex.sq_sig_all$offset());
        assertEquals(ibv_qp_init_attr.cap$offset(), ibv_qp_init_attr_ex.cap$offset());
    }
}
