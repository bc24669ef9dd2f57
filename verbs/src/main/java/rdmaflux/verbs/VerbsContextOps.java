package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.verbs_context;

/**
 * verbs.h's {@code verbs_get_ctx_op}: the function pointers of {@code struct verbs_context} that the
 * static inline verbs ({@code ibv_open_xrcd}, {@code ibv_create_qp_ex}, ...) call, with its checks.
 */
final class VerbsContextOps {
    private VerbsContextOps() {
    }

    /**
     * Reads one function pointer of the verbs_context that ends in {@code ctx}.
     *
     * @param ctx the {@code struct ibv_context}
     * @param offset the field's offset, e.g. {@code verbs_context.open_xrcd$offset()}
     * @return the pointer, or NULL when the context is a legacy one, the library's verbs_context predates
     *     the field, or the provider left it empty: where the inline functions fail with EOPNOTSUPP
     */
    static MemorySegment op(MemorySegment ctx, long offset) {
        // verbs_get_ctx(): abi_compat == (void *) -1 marks an ibv_context that ends a verbs_context.
        if (ibv_context.abi_compat(ctx).address() != -1L) {
            return MemorySegment.NULL;
        }
        MemorySegment vctx = MemorySegment.ofAddress(ctx.address() - verbs_context.context$offset())
                .reinterpret(verbs_context.sizeof());
        // New fields go at the front; sz is the size the library built it with.
        if (verbs_context.sz(vctx) < verbs_context.sizeof() - offset) {
            return MemorySegment.NULL;
        }
        return vctx.get(java.lang.foreign.ValueLayout.ADDRESS, offset);
    }
}
