package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.RdmaH;
import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_pd;
import rdmaflux.verbs.ffi.ibv_qp_init_attr;
import rdmaflux.verbs.ffi.ibv_qp_init_attr_ex;
import rdmaflux.verbs.ffi.verbs_context;
import rdmaflux.verbs.ffi.ibv_srq_init_attr;
import rdmaflux.verbs.ffi.ibv_srq_attr;

/**
 * A protection domain: memory regions, QPs, SRQs and address handles in one PD can be used together.
 */
public final class ProtectionDomain extends NativeResource {
    private final RdmaContext context;

    ProtectionDomain(RdmaContext context, MemorySegment pd) {
        super(Rank.PD, pd.reinterpret(ibv_pd.sizeof()), context);
        this.context = context;
    }

    /** {@return the device context this PD belongs to} */
    public RdmaContext context() {
        return context;
    }

    /**
     * Registers memory with {@link AccessFlags#LOCAL_WRITE} only.
     *
     * @param segment native memory that stays allocated until the region is destroyed (see {@link #register(
     *                MemorySegment, AccessFlags)})
     * @return the region
     */
    public MemoryRegion register(MemorySegment segment) {
        return register(segment, AccessFlags.LOCAL_WRITE);
    }

    /**
     * Registers memory: pins it and gives it keys the device can use.
     *
     * <p>The memory stays the caller's: it must stay allocated until the region is destroyed, which
     * {@link MemoryRegion#close()} defers while posted work requests use the region (until their completions
     * are polled, {@link MemoryRegion#isDestroyed()}). Posting checks that the memory is still allocated; once
     * posted, nothing can stop the device from using memory the caller freed meanwhile. Where that order is
     * hard to keep, {@link #allocateRegion} gives a region that owns its memory.
     *
     * @param segment native memory (not a heap segment: the GC moves those) that stays allocated until the
     *                region is destroyed
     * @param access what the local device and remote peers may do with it
     * @return the region
     * @throws IllegalArgumentException for a heap or empty segment
     * @throws RdmaMemlockException when pinning it would pass the locked-memory limit (the message says how
     *         to raise it)
     * @throws RdmaResourceException when the kernel or device has no room for it otherwise
     */
    public MemoryRegion register(MemorySegment segment, AccessFlags access) {
        if (segment == null || access == null) {
            throw new NullPointerException("segment and access are required");
        }
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered (allocate it from an Arena); "
                    + "heap segments move with the garbage collector");
        }
        if (segment.byteSize() <= 0) {
            throw new IllegalArgumentException("cannot register an empty segment");
        }
        if (segment.scope() != null && !segment.scope().isAlive()) {
            throw new IllegalStateException("the segment's arena is already closed");
        }
        MemorySegment pd = acquire();
        try {
            MemorySegment mr = registerRaw(pd, segment, access);
            return new MemoryRegion(this, mr, segment, access);
        } finally {
            release();
        }
    }

    /**
     * Allocates zeroed native memory and registers it, as a region that owns it: the memory is freed right
     * after the region is deregistered, which {@link MemoryRegion#close()} defers while posted work requests
     * use it. So no request can ever reach freed memory, however the closes are ordered. The memory is
     * shared ({@link Arena#ofShared()}): any thread may use {@link MemoryRegion#segment()} until the region
     * is destroyed, after which the segment fails with {@link IllegalStateException}.
     *
     * @param size bytes, more than 0
     * @param alignment a power of two, e.g. 4096 for page-aligned memory
     * @param access what the local device and remote peers may do with it
     * @return the region
     * @throws RdmaMemlockException when pinning it would pass the locked-memory limit (the message says how
     *         to raise it)
     * @throws RdmaResourceException when the kernel or device has no room for it otherwise
     */
    public MemoryRegion allocateRegion(long size, long alignment, AccessFlags access) {
        if (access == null) {
            throw new NullPointerException("access is required");
        }
        if (size <= 0) {
            throw new IllegalArgumentException("cannot register an empty segment, got size " + size);
        }
        Arena arena = Arena.ofShared();
        boolean made = false;
        try {
            MemorySegment segment = arena.allocate(size, alignment);
            MemorySegment pd = acquire();
            try {
                MemorySegment mr = registerRaw(pd, segment, access);
                MemoryRegion region = new MemoryRegion(this, mr, segment, access, arena);
                made = true;
                return region;
            } finally {
                release();
            }
        } finally {
            if (!made) {
                arena.close();
            }
        }
    }

    /**
     * {@code ibv_reg_mr}, its failure explained by the locked-memory limit when that is the cause, else by the
     * device's or the rdma cgroup's ({@link DeviceLimits}).
     */
    private MemorySegment registerRaw(MemorySegment pd, MemorySegment segment, AccessFlags access) {
        try {
            return Calls.IBV_REG_MR.callPointer(pd, segment, segment.byteSize(), access.mask());
        } catch (RdmaException e) {
            RdmaException memlock = Memlock.explain(e, segment.address(), segment.byteSize());
            throw memlock != e ? memlock : DeviceLimits.explain(e, context.deviceName(), context::queryDevice,
                    DeviceLimits.Kind.MEMORY_REGION, null);
        }
    }

    /**
     * Allocates a memory window ({@code ibv_alloc_mw}) to grant peers revocable access to part of a region.
     *
     * @param type {@link MemoryWindowType#TYPE_1} (bound with {@link MemoryWindow#bind}) or
     *             {@link MemoryWindowType#TYPE_2} (bound by posting)
     * @return the window, unbound
     * @throws RdmaUnsupportedException (EOPNOTSUPP) when the device has no memory windows of that type
     */
    public MemoryWindow allocateMemoryWindow(MemoryWindowType type) {
        java.util.Objects.requireNonNull(type, "type");
        MemorySegment pd = acquire();
        try {
            return MemoryWindow.allocate(this, pd, type);
        } finally {
            release();
        }
    }

    /**
     * Creates a queue pair in this PD.
     *
     * @param attributes type, completion queues and capacities
     * @return the QP, in state RESET
     */
    public QueuePair createQueuePair(QpInitAttributes attributes) {
        MemorySegment pd = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment init = ibv_qp_init_attr.allocate(arena);
            try (var leases = attributes.writeTo(init)) {
                MemorySegment qp;
                try {
                    qp = Calls.IBV_CREATE_QP.callPointer(pd, init);
                } catch (RdmaException e) {
                    throw DeviceLimits.explain(e, context.deviceName(), context::queryDevice,
                            DeviceLimits.Kind.QUEUE_PAIR, attributes.size());
                }
                return new QueuePair(this, qp, attributes, init, null);
            }
        } finally {
            release();
        }
    }

    /**
     * Creates a queue pair with {@code ibv_create_qp_ex} for the extended post API
     * ({@link QueuePair#extendedSendQueue()}); it also takes the classic {@link QueuePair#postSend}.
     *
     * @param attributes type, completion queues and capacities
     * @param sendOps the operations its extended send queue may post; not empty
     * @return the QP, in state RESET
     * @throws RdmaUnsupportedException (EOPNOTSUPP) when the device has no {@code create_qp_ex} or cannot do one
     *     of {@code sendOps} on this QP type (e.g. RDMA WRITE on UD), or {@link SendOp#ATOMIC_WRITE} is asked for
     *     and the device does not report it ({@link RdmaContext#supportsAtomicWrite()})
     */
    public QueuePair createExtendedQueuePair(QpInitAttributes attributes, java.util.Set<SendOp> sendOps) {
        int ops = NativeConstant.mask(sendOps);
        if (ops == 0) {
            throw new IllegalArgumentException("name at least one SendOp");
        }
        MemorySegment pd = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ctx = ibv_pd.context(pd);
            MemorySegment fn = VerbsContextOps.op(ctx.reinterpret(ibv_context.sizeof()),
                    verbs_context.create_qp_ex$offset());
            if (fn.equals(MemorySegment.NULL)) {
                throw new RdmaUnsupportedException("ibv_create_qp_ex", "the provider of " + context.deviceName()
                        + " has no create_qp_ex");
            }
            if ((ops & SendOp.ATOMIC_WRITE.value()) != 0) {
                ExtendedCapabilities.checkSendOps(ops, ExtendedCapabilities.query(ctx.reinterpret(ibv_context.sizeof())),
                        context.deviceName());
            }
            MemorySegment init = ibv_qp_init_attr_ex.allocate(arena);
            // ibv_qp_init_attr_ex begins with the fields of ibv_qp_init_attr, in the same places.
            MemorySegment classic = init.asSlice(0, ibv_qp_init_attr.sizeof());
            try (var leases = attributes.writeTo(classic)) {
                ibv_qp_init_attr_ex.comp_mask(init, RdmaH.IBV_QP_INIT_ATTR_PD() | RdmaH.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS());
                ibv_qp_init_attr_ex.pd(init, pd);
                ibv_qp_init_attr_ex.send_ops_flags(init, ops);
                MemorySegment qp = (MemorySegment) ProviderCalls.CREATE_QP_EX.at(fn).invoke(ctx, init);
                if (qp.equals(MemorySegment.NULL)) {
                    int errno = Native.lastErrno();
                    if (errno == Errno.EOPNOTSUPP) {
                        throw new RdmaUnsupportedException("ibv_create_qp_ex", context.deviceName() + " cannot create a "
                                + attributes.type() + " QP with " + sendOps);
                    }
                    throw DeviceLimits.explain(RdmaException.of("ibv_create_qp_ex", errno == 0 ? Errno.ENOMEM : errno, null),
                            context.deviceName(), context::queryDevice, DeviceLimits.Kind.QUEUE_PAIR, attributes.size());
                }
                QueuePair created = new QueuePair(this, qp, attributes, classic, null);
                created.attachExtended(ops);
                return created;
            }
        } finally {
            release();
        }
    }

    /**
     * Creates a shared receive queue: one pool of receives for many QPs.
     *
     * @param maxWr receive work requests it holds
     * @param maxSge scatter/gather entries per request
     * @param limit when fewer than this many remain posted, an SRQ_LIMIT_REACHED async event fires; 0 for none
     * @return the SRQ
     */
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit) {
        if (maxWr <= 0 || maxSge <= 0 || limit < 0) {
            throw new IllegalArgumentException("maxWr and maxSge must be > 0 and limit >= 0: " + maxWr + ", "
                    + maxSge + ", " + limit);
        }
        MemorySegment pd = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment init = ibv_srq_init_attr.allocate(arena);
            MemorySegment attr = ibv_srq_init_attr.attr(init);
            ibv_srq_attr.max_wr(attr, maxWr);
            ibv_srq_attr.max_sge(attr, maxSge);
            ibv_srq_attr.srq_limit(attr, limit);
            MemorySegment srq;
            try {
                srq = Calls.IBV_CREATE_SRQ.callPointer(pd, init);
            } catch (RdmaException e) {
                throw DeviceLimits.explain(e, context.deviceName(), context::queryDevice,
                        DeviceLimits.Kind.SHARED_RECEIVE_QUEUE, null);
            }
            return new SharedReceiveQueue(this, srq, ibv_srq_attr.max_wr(attr), ibv_srq_attr.max_sge(attr));
        } finally {
            release();
        }
    }

    /**
     * Creates an address handle: the destination of UD sends.
     *
     * @param attributes where to send
     * @return the AH
     */
    public AddressHandle createAddressHandle(AddressHandleAttributes attributes) {
        MemorySegment pd = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ah = Calls.IBV_CREATE_AH.callPointer(pd, attributes.toNative(arena));
            return new AddressHandle(this, ah, attributes);
        } finally {
            release();
        }
    }

    /** Creates an AH from a native {@code ibv_ah_attr}, as the connection manager's UD events carry. */
    AddressHandle createAddressHandle(MemorySegment ahAttr) {
        MemorySegment pd = acquire();
        try {
            MemorySegment ah = Calls.IBV_CREATE_AH.callPointer(pd, ahAttr);
            return new AddressHandle(this, ah, AddressHandleAttributes.fromNative(ahAttr));
        } finally {
            release();
        }
    }

    @Override
    void destroy() {
        Calls.IBV_DEALLOC_PD.callStatus(handle);
    }

    @Override
    public String toString() {
        return "ProtectionDomain[" + context.deviceName() + "]";
    }
}
