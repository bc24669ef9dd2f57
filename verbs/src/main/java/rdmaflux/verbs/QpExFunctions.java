package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_qp_ex;

/**
 * The provider's {@code ibv_wr_*} functions of one extended QP, read once from its {@code struct ibv_qp_ex}:
 * verbs.h's static inline {@code ibv_wr_*} call through these pointers, and so does
 * {@link ExtendedSendQueue}, by way of {@link ProviderCalls}. A pointer is only called for an operation the
 * QP was created with, since a provider's function for another may be missing or wrong.
 *
 * <p>Threads: any; immutable.
 */
record QpExFunctions(MemorySegment start, MemorySegment complete, MemorySegment abort, MemorySegment send,
                     MemorySegment sendImm, MemorySegment sendInv, MemorySegment write, MemorySegment writeImm,
                     MemorySegment read, MemorySegment cmpSwp, MemorySegment fetchAdd, MemorySegment localInv,
                     MemorySegment atomicWrite, MemorySegment setSge, MemorySegment setInline,
                     MemorySegment setUdAddr, MemorySegment bindMw) {

    /**
     * Reads the function pointers.
     *
     * @param q the QP's {@code struct ibv_qp_ex}, sized to it
     * @return its functions
     */
    static QpExFunctions of(MemorySegment q) {
        return new QpExFunctions(ibv_qp_ex.wr_start(q), ibv_qp_ex.wr_complete(q), ibv_qp_ex.wr_abort(q),
                ibv_qp_ex.wr_send(q), ibv_qp_ex.wr_send_imm(q), ibv_qp_ex.wr_send_inv(q),
                ibv_qp_ex.wr_rdma_write(q), ibv_qp_ex.wr_rdma_write_imm(q), ibv_qp_ex.wr_rdma_read(q),
                ibv_qp_ex.wr_atomic_cmp_swp(q), ibv_qp_ex.wr_atomic_fetch_add(q), ibv_qp_ex.wr_local_inv(q),
                ibv_qp_ex.wr_atomic_write(q), ibv_qp_ex.wr_set_sge(q), ibv_qp_ex.wr_set_inline_data(q),
                ibv_qp_ex.wr_set_ud_addr(q), ibv_qp_ex.wr_bind_mw(q));
    }
}
