package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.RdmaH;
import rdmaflux.verbs.ffi.ibv_xrcd_init_attr;
import rdmaflux.verbs.ffi.verbs_context;

/**
 * An XRC domain ({@code struct ibv_xrcd}), opened with {@link RdmaContext#openXrcDomain()}: the scope
 * within which XRC SRQs and XRC receive QPs are shared. {@code ibv_open_xrcd} and
 * {@code ibv_close_xrcd} are static inline in verbs.h; like them this class calls
 * {@code verbs_context.open_xrcd}/{@code close_xrcd} and reports EOPNOTSUPP, as a
 * {@link RdmaUnsupportedException}, when the provider has none (Soft-RoCE: rxe has no XRC).
 * Closed with its context at the latest; any thread may use it.
 */
public final class XrcDomain extends NativeResource {
    /** {@code O_CREAT} on Linux (fcntl.h): create the domain when no file names an existing one. */
    private static final int O_CREAT = 0100;

    private final RdmaContext context;
    private final Native.Fn close;

    private XrcDomain(RdmaContext context, MemorySegment xrcd, Native.Fn close) {
        super(Rank.PD, xrcd, context);
        this.context = context;
        this.close = close;
    }

    /** {@return the device context this domain belongs to} */
    public RdmaContext context() {
        return context;
    }

    /** Opens a domain of its own (no file to share it through), as {@code xsrq_pingpong} does. */
    static XrcDomain open(RdmaContext context, MemorySegment ctx) {
        MemorySegment openFn = VerbsContextOps.op(ctx, verbs_context.open_xrcd$offset());
        MemorySegment closeFn = VerbsContextOps.op(ctx, verbs_context.close_xrcd$offset());
        if (openFn.equals(MemorySegment.NULL) || closeFn.equals(MemorySegment.NULL)) {
            throw new RdmaUnsupportedException("ibv_open_xrcd", "the provider of " + context.deviceName()
                    + " has no XRC domains");
        }
        Native.Fn open = ProviderCalls.OPEN_XRCD.at(openFn);
        Native.Fn close = ProviderCalls.CLOSE_XRCD.at(closeFn);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_xrcd_init_attr.allocate(arena);
            ibv_xrcd_init_attr.comp_mask(attr, RdmaH.IBV_XRCD_INIT_ATTR_FD() | RdmaH.IBV_XRCD_INIT_ATTR_OFLAGS());
            ibv_xrcd_init_attr.fd(attr, -1);
            ibv_xrcd_init_attr.oflags(attr, O_CREAT);
            MemorySegment xrcd = (MemorySegment) open.invoke(ctx, attr);
            if (xrcd.equals(MemorySegment.NULL)) {
                int errno = Native.lastErrno();
                if (errno == Errno.EOPNOTSUPP) {
                    throw new RdmaUnsupportedException("ibv_open_xrcd", "the provider of " + context.deviceName()
                            + " has no XRC domains");
                }
                throw RdmaException.of("ibv_open_xrcd", errno == 0 ? Errno.ENOMEM : errno, null);
            }
            return new XrcDomain(context, xrcd, close);
        }
    }

    @Override
    void destroy() {
        close.callStatus(handle);
    }

    @Override
    public String toString() {
        return "XrcDomain[" + context.deviceName() + "]";
    }
}
