package rdmaflux.verbs;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.ibv_qp_ex;
import rdmaflux.verbs.ffi.verbs_context;

/**
 * The provider's functions that verbs.h's static inline verbs call through function pointers
 * ({@code struct ibv_context_ops}, {@code struct verbs_context}, {@code struct ibv_qp_ex}): part of the
 * native core, with {@link Native}, {@link Calls}, {@link CmCalls} and {@link Posix}. The callers read
 * the pointers; the calls happen here.
 *
 * <p>The control-path functions are {@link LinkedOp}s, linked with errno capture once per address. The
 * data-path ones (poll, notify, post, the {@code ibv_wr_*} builders) are exact calls that allocate
 * nothing; they report through their result, never errno.
 */
final class ProviderCalls {
    /** {@code verbs_context.query_device_ex}. */
    static final LinkedOp QUERY_DEVICE_EX = new LinkedOp("ibv_query_device_ex", verbs_context.query_device_ex.descriptor());
    /** {@code verbs_context.query_port}, which fills all of {@code struct ibv_port_attr}. */
    static final LinkedOp QUERY_PORT = new LinkedOp("ibv_query_port", verbs_context.query_port.descriptor());
    /** {@code verbs_context.create_qp_ex}. */
    static final LinkedOp CREATE_QP_EX = new LinkedOp("ibv_create_qp_ex", verbs_context.create_qp_ex.descriptor());
    /** {@code verbs_context.open_xrcd}. */
    static final LinkedOp OPEN_XRCD = new LinkedOp("ibv_open_xrcd", verbs_context.open_xrcd.descriptor());
    /** {@code verbs_context.close_xrcd}. */
    static final LinkedOp CLOSE_XRCD = new LinkedOp("ibv_close_xrcd", verbs_context.close_xrcd.descriptor());
    /** {@code ibv_context_ops.alloc_mw}. */
    static final LinkedOp ALLOC_MW = new LinkedOp("ibv_alloc_mw", ibv_context_ops.alloc_mw.descriptor());
    /** {@code ibv_context_ops.dealloc_mw}. */
    static final LinkedOp DEALLOC_MW = new LinkedOp("ibv_dealloc_mw", ibv_context_ops.dealloc_mw.descriptor());
    /** {@code ibv_context_ops.bind_mw}. */
    static final LinkedOp BIND_MW = new LinkedOp("ibv_bind_mw", ibv_context_ops.bind_mw.descriptor());

    private ProviderCalls() {
    }

    /**
     * {@code int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *)} with the pointers as plain 64-bit
     * integers, as the C calling convention passes them: the CQ is kept alive by the caller's lease, the
     * array by the caller's reference, and a long skips the linker's per-argument segment checks (see
     * {@link Post}).
     */
    private static final class Poll {
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    }

    /**
     * The provider's post functions ({@code post_send}, {@code post_recv}, {@code post_srq_recv}) all are
     * {@code int (*)(queue *, wr *, wr **)}. The pointers go as plain 64-bit integers, which the C calling
     * convention passes exactly like pointers: the memory behind them is kept alive by the caller's lease
     * (the queue) and by the caller's batch (the requests), and a long skips the linker's per-argument
     * segment checks, which C1-compiled code pays in full on every post.
     */
    private static final class Post {
        // In a holder of its own so that filling a batch never needs the linker (or native access).
        static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    }

    /**
     * {@code ibv_poll_cq}.
     *
     * @param fn {@code ibv_context_ops.poll_cq}
     * @param cq the address of the leased CQ
     * @param entries how many completions fit at {@code wc}
     * @param wc the address of the {@code struct ibv_wc} array
     * @return how many completions were written, or a negative value on error
     */
    static int pollCq(MemorySegment fn, long cq, int entries, long wc) {
        try {
            return (int) Poll.HANDLE.invokeExact(fn, cq, entries, wc);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("a downcall threw " + t, t);
        }
    }

    /**
     * {@code ibv_post_send}, {@code ibv_post_recv} or {@code ibv_post_srq_recv}.
     *
     * @param fn the provider's post function
     * @param queue the address of the leased QP or SRQ
     * @param wrs the address of the first work request
     * @param badWr the address the provider writes the first refused request's address to
     * @return 0, or an errno
     */
    static int post(MemorySegment fn, long queue, long wrs, long badWr) {
        try {
            return (int) Post.HANDLE.invokeExact(fn, queue, wrs, badWr);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("a downcall threw " + t, t);
        }
    }

    /**
     * {@code ibv_req_notify_cq}.
     *
     * @param fn {@code ibv_context_ops.req_notify_cq}
     * @return 0, or an errno
     */
    static int reqNotifyCq(MemorySegment fn, MemorySegment cq, int solicitedOnly) {
        return ibv_context_ops.req_notify_cq.invoke(fn, cq, solicitedOnly);
    }

    // The ibv_wr_* builders of struct ibv_qp_ex, each called with the pointer read from the QP's ibv_qp_ex.

    static void wrStart(MemorySegment fn, MemorySegment qpx) {
        ibv_qp_ex.wr_start.invoke(fn, qpx);
    }

    /** Posts the batch; returns 0, or an errno when nothing was posted. */
    static int wrComplete(MemorySegment fn, MemorySegment qpx) {
        return ibv_qp_ex.wr_complete.invoke(fn, qpx);
    }

    static void wrAbort(MemorySegment fn, MemorySegment qpx) {
        ibv_qp_ex.wr_abort.invoke(fn, qpx);
    }

    static void wrSend(MemorySegment fn, MemorySegment qpx) {
        ibv_qp_ex.wr_send.invoke(fn, qpx);
    }

    static void wrSendImm(MemorySegment fn, MemorySegment qpx, int imm) {
        ibv_qp_ex.wr_send_imm.invoke(fn, qpx, imm);
    }

    static void wrSendInv(MemorySegment fn, MemorySegment qpx, int invalidateRkey) {
        ibv_qp_ex.wr_send_inv.invoke(fn, qpx, invalidateRkey);
    }

    static void wrRdmaWrite(MemorySegment fn, MemorySegment qpx, int rkey, long remoteAddress) {
        ibv_qp_ex.wr_rdma_write.invoke(fn, qpx, rkey, remoteAddress);
    }

    static void wrRdmaWriteImm(MemorySegment fn, MemorySegment qpx, int rkey, long remoteAddress, int imm) {
        ibv_qp_ex.wr_rdma_write_imm.invoke(fn, qpx, rkey, remoteAddress, imm);
    }

    static void wrRdmaRead(MemorySegment fn, MemorySegment qpx, int rkey, long remoteAddress) {
        ibv_qp_ex.wr_rdma_read.invoke(fn, qpx, rkey, remoteAddress);
    }

    static void wrAtomicCmpSwp(MemorySegment fn, MemorySegment qpx, int rkey, long remoteAddress, long compare,
                               long swap) {
        ibv_qp_ex.wr_atomic_cmp_swp.invoke(fn, qpx, rkey, remoteAddress, compare, swap);
    }

    static void wrAtomicFetchAdd(MemorySegment fn, MemorySegment qpx, int rkey, long remoteAddress, long add) {
        ibv_qp_ex.wr_atomic_fetch_add.invoke(fn, qpx, rkey, remoteAddress, add);
    }

    static void wrAtomicWrite(MemorySegment fn, MemorySegment qpx, int rkey, long remoteAddress, MemorySegment value) {
        ibv_qp_ex.wr_atomic_write.invoke(fn, qpx, rkey, remoteAddress, value);
    }

    static void wrLocalInv(MemorySegment fn, MemorySegment qpx, int invalidateRkey) {
        ibv_qp_ex.wr_local_inv.invoke(fn, qpx, invalidateRkey);
    }

    static void wrBindMw(MemorySegment fn, MemorySegment qpx, MemorySegment mw, int rkey, MemorySegment bindInfo) {
        ibv_qp_ex.wr_bind_mw.invoke(fn, qpx, mw, rkey, bindInfo);
    }

    static void wrSetSge(MemorySegment fn, MemorySegment qpx, int lkey, long address, int length) {
        ibv_qp_ex.wr_set_sge.invoke(fn, qpx, lkey, address, length);
    }

    static void wrSetInlineData(MemorySegment fn, MemorySegment qpx, MemorySegment data, long length) {
        ibv_qp_ex.wr_set_inline_data.invoke(fn, qpx, data, length);
    }

    static void wrSetUdAddr(MemorySegment fn, MemorySegment qpx, MemorySegment ah, int remoteQpn, int remoteQkey) {
        ibv_qp_ex.wr_set_ud_addr.invoke(fn, qpx, ah, remoteQpn, remoteQkey);
    }
}
