package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_device_attr;
import rdmaflux.verbs.ffi.ibv_device_attr_ex;
import rdmaflux.verbs.ffi.verbs_context;

/**
 * {@code ibv_query_device_ex}'s {@code device_cap_flags_ex}, the 64-bit capability mask (the kernel's
 * {@code enum ib_uverbs_device_cap_flags}), and the operations it gates.
 */
final class ExtendedCapabilities {
    /**
     * {@code IB_UVERBS_DEVICE_ATOMIC_WRITE} ({@code 1ULL << 40}, kernel uapi {@code ib_user_verbs.h} since Linux
     * 6.2): the device executes {@code IBV_WR_ATOMIC_WRITE}. rdma-core 44's headers predate it, so it is spelled
     * out here.
     */
    static final long ATOMIC_WRITE = 1L << 40;

    private ExtendedCapabilities() {
    }

    /**
     * Queries {@code device_cap_flags_ex} as verbs.h's inline {@code ibv_query_device_ex} does: through
     * {@code verbs_context.query_device_ex}, falling back to {@code ibv_query_device}'s 32-bit
     * {@code device_cap_flags} when the provider has none or answers EOPNOTSUPP/ENOSYS.
     *
     * @param ctx the leased {@code struct ibv_context}
     */
    static long query(MemorySegment ctx) {
        MemorySegment fn = VerbsContextOps.op(ctx, verbs_context.query_device_ex$offset());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_device_attr_ex.allocate(arena);
            if (!fn.equals(MemorySegment.NULL)) {
                int rc = (int) ProviderCalls.QUERY_DEVICE_EX.at(fn)
                        .invoke(ctx, MemorySegment.NULL, attr, ibv_device_attr_ex.sizeof());
                if (rc == 0) {
                    return ibv_device_attr_ex.device_cap_flags_ex(attr);
                }
                if (rc != Errno.EOPNOTSUPP && rc != Errno.ENOSYS) {
                    throw RdmaException.of("ibv_query_device_ex", rc > 0 ? rc : Native.lastErrno(), null);
                }
            }
            MemorySegment legacy = ibv_device_attr.allocate(arena);
            Calls.IBV_QUERY_DEVICE.callStatus(ctx, legacy);
            return Integer.toUnsignedLong(ibv_device_attr.device_cap_flags(legacy));
        }
    }

    /**
     * Refuses send operations the device does not report, before {@code ibv_create_qp_ex}: a provider may
     * accept them at creation and the kernel fail each request later (rdma-core 44's rxe on Linux 6.1 takes
     * {@code IBV_QP_EX_WITH_ATOMIC_WRITE} and completes every ATOMIC WRITE with {@code LOC_QP_OP_ERR}).
     *
     * @param sendOps the {@link SendOp} mask asked for
     * @param capabilitiesEx the device's {@code device_cap_flags_ex}
     * @param device the device's name, for the message
     * @throws RdmaUnsupportedException (EOPNOTSUPP) for {@link SendOp#ATOMIC_WRITE} without {@link #ATOMIC_WRITE}
     */
    static void checkSendOps(int sendOps, long capabilitiesEx, String device) {
        if ((sendOps & SendOp.ATOMIC_WRITE.value()) != 0 && (capabilitiesEx & ATOMIC_WRITE) == 0) {
            throw new RdmaUnsupportedException("ibv_create_qp_ex", device + " does not report ATOMIC WRITE "
                    + "(IB_UVERBS_DEVICE_ATOMIC_WRITE, bit 40 of device_cap_flags_ex; Linux before 6.2 has none)");
        }
    }
}
