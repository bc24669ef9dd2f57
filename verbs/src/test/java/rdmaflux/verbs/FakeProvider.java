package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.ibv_cq;
import rdmaflux.verbs.ffi.ibv_device;
import rdmaflux.verbs.ffi.ibv_mr;
import rdmaflux.verbs.ffi.ibv_pd;
import rdmaflux.verbs.ffi.ibv_qp;
import rdmaflux.verbs.ffi.ibv_qp_cap;
import rdmaflux.verbs.ffi.ibv_qp_ex;
import rdmaflux.verbs.ffi.ibv_qp_init_attr;
import rdmaflux.verbs.ffi.ibv_wc;

/**
 * A device context, PD, CQ and RC QP made of plain native memory, whose provider functions (post_send,
 * post_recv, poll_cq) all point at libc's {@code pthread_spin_unlock}: a real native function that
 * returns 0 after one store to its first argument (here the first word of the fake {@code ibv_qp} or
 * {@code ibv_cq}, which the Java side reads only at construction; on x86-64 it stores 1, elsewhere 0). Posting and polling through these
 * objects runs every line of the Java side, lease and downcall included, and costs almost nothing
 * natively: the JMH benchmarks use them to measure the Java part of a post or poll without a device, the
 * unit tests to check that path (and that it allocates nothing).
 *
 * <p>The fake poll finds nothing; {@link #complete} hands the CQ a completion as if a poll had returned it,
 * which retires the QP's recorded work requests as a real one does.
 *
 * <p>The objects are never closed: destroying them would hand fake memory to libibverbs.
 */
final class FakeProvider {
    final QueuePair qp;
    final CompletionQueue cq;
    /** 4 KiB of real memory; its keys are made up, nothing ever reaches a device. */
    final MemoryRegion mr;
    /** The QP's extended send queue over a fake {@code ibv_qp_ex} whose wr_* functions are the same no-op. */
    final ExtendedSendQueue extended;

    FakeProvider(int maxSendSge, int maxReceiveSge) {
        Arena arena = Arena.ofAuto();
        MemorySegment noop = Linker.nativeLinker().defaultLookup().find("pthread_spin_unlock")
                .orElseThrow(() -> new IllegalStateException("libc has no pthread_spin_unlock"));

        MemorySegment device = ibv_device.allocate(arena);
        ibv_device.name(device).setString(0, "fake0");
        MemorySegment ctx = ibv_context.allocate(arena);
        ibv_context.device(ctx, device);
        MemorySegment ops = ibv_context.ops(ctx);
        ibv_context_ops.post_send(ops, noop);
        ibv_context_ops.post_recv(ops, noop);
        ibv_context_ops.poll_cq(ops, noop);
        ibv_context_ops.req_notify_cq(ops, noop);
        // ibv_dealloc_mw is inline too: a fake window (MemoryWindowBindTest, DeferredCloseTest) can be closed.
        ibv_context_ops.dealloc_mw(ops, noop);
        RdmaContext context = new RdmaContext(ctx, false);

        ProtectionDomain pd = new ProtectionDomain(context, ibv_pd.allocate(arena));

        MemorySegment mrMem = ibv_mr.allocate(arena);
        ibv_mr.lkey(mrMem, 0x1234);
        ibv_mr.rkey(mrMem, 0x5678);
        mr = new MemoryRegion(pd, mrMem, arena.allocate(4096, 4096), AccessFlags.REMOTE_ALL);

        MemorySegment cqMem = ibv_cq.allocate(arena);
        ibv_cq.context(cqMem, ctx);
        ibv_cq.cqe(cqMem, 1024);
        cq = new CompletionQueue(context, null, cqMem, -1);

        MemorySegment qpMem = ibv_qp.allocate(arena);
        ibv_qp.context(qpMem, ctx);
        ibv_qp.qp_num(qpMem, 17);
        MemorySegment init = ibv_qp_init_attr.allocate(arena);
        MemorySegment cap = ibv_qp_init_attr.cap(init);
        ibv_qp_cap.max_send_wr(cap, 128);
        ibv_qp_cap.max_recv_wr(cap, 512);
        ibv_qp_cap.max_send_sge(cap, maxSendSge);
        ibv_qp_cap.max_recv_sge(cap, maxReceiveSge);
        QpInitAttributes attributes = QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                .depth(128, 512).sge(maxSendSge, maxReceiveSge).build();
        qp = new QueuePair(pd, qpMem, attributes, init, null);

        MemorySegment qpx = ibv_qp_ex.allocate(arena);
        for (long off = ibv_qp_ex.wr_atomic_cmp_swp$offset(); off < ibv_qp_ex.sizeof(); off += 8) {
            qpx.set(ValueLayout.ADDRESS, off, noop);
        }
        extended = new ExtendedSendQueue(qp, qpx, -1);
        completion = new WorkCompletions(1);
    }

    /** Where {@link #complete} writes its completion. */
    private final WorkCompletions completion;

    /**
     * Delivers one successful completion of the fake QP to its CQ, as a poll returning it would: it retires
     * the work requests it ends. Allocates nothing.
     *
     * @param wrId the completed request's id
     * @param opcode its {@link WcOpcode}
     */
    void complete(long wrId, WcOpcode opcode) {
        complete(wrId, 0, opcode.value());
    }

    /**
     * Delivers one completion of the fake QP to its CQ, with any status and raw opcode.
     *
     * @param wrId the completed request's id
     * @param status the raw {@code ibv_wc_status}
     * @param opcode the raw {@code ibv_wc_opcode}
     */
    void complete(long wrId, int status, int opcode) {
        MemorySegment wc = completion.segment();
        ibv_wc.wr_id(wc, wrId);
        ibv_wc.status(wc, status);
        ibv_wc.opcode(wc, opcode);
        ibv_wc.qp_num(wc, qp.number());
        cq.deliver(completion, 1);
    }
}
