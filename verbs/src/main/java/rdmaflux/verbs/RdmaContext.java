package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_device;
import rdmaflux.verbs.ffi.ibv_device_attr;
import rdmaflux.verbs.ffi.ibv_gid;
import rdmaflux.verbs.ffi.ibv_gid_entry;
import rdmaflux.verbs.ffi.ibv_port_attr;
import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.verbs_context;

/**
 * An open RDMA device ({@code struct ibv_context}): the parent of protection domains, completion
 * channels and completion queues.
 *
 * <p>Closing it closes everything created from it, QPs first. A context obtained from a connection
 * manager id ({@link CmId#context()}) belongs to librdmacm: closing it frees what was created through it
 * but leaves the device open.
 *
 * <p>Threads: any; each call holds a lease on the native context ({@link NativeResource}), and
 * asynchronous events are read one at a time ({@code AsyncEventReader}).
 */
public final class RdmaContext extends NativeResource {
    private final boolean owned;
    private final String deviceName;
    /** The provider's {@code post_send} and {@code post_recv} ({@code ibv_context.ops}), for every QP of this context. */
    final MemorySegment postSendFn;
    final MemorySegment postRecvFn;
    /** One context per native device context that librdmacm opened: see {@link CmId#sharedContext()}. */
    private static final Map<Long, RdmaContext> SHARED = new ConcurrentHashMap<>();
    private final AsyncEventReader asyncEvents = new AsyncEventReader(this);
    /** Set, under this, once {@link #releaseRemoved()} let go of the removed device. */
    private boolean released;

    RdmaContext(MemorySegment context, boolean owned, NativeResource... owners) {
        super(Rank.CONTEXT, context.reinterpret(ibv_context.sizeof()), owners);
        this.owned = owned;
        MemorySegment device = ibv_context.device(handle).reinterpret(ibv_device.sizeof());
        this.deviceName = ibv_device.name(device).getString(0);
        MemorySegment ops = ibv_context.ops(handle);
        this.postSendFn = ibv_context_ops.post_send(ops);
        this.postRecvFn = ibv_context_ops.post_recv(ops);
    }

    /** {@return the device name, e.g. {@code rxe0}} */
    public String deviceName() {
        return deviceName;
    }

    /** {@return how many completion vectors (interrupt queues) the device has} */
    public int completionVectorCount() {
        try {
            return ibv_context.num_comp_vectors(acquire());
        } finally {
            release();
        }
    }

    /** {@return the device's transport ({@code ibv_device.transport_type}); {@link Transport#IB} for RoCE too} */
    public Transport transport() {
        try {
            return Transport.of(ibv_device.transport_type(device(acquire())));
        } finally {
            release();
        }
    }

    /** {@return the device's node type ({@code ibv_device.node_type})} */
    public NodeType nodeType() {
        try {
            return NodeType.of(ibv_device.node_type(device(acquire())));
        } finally {
            release();
        }
    }

    private static MemorySegment device(MemorySegment ctx) {
        return ibv_context.device(ctx).reinterpret(ibv_device.sizeof());
    }

    /**
     * Queries the device's limits.
     *
     * @return a copy of {@code struct ibv_device_attr}
     */
    public DeviceAttributes queryDevice() {
        MemorySegment ctx = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_device_attr.allocate(arena);
            Calls.IBV_QUERY_DEVICE.callStatus(ctx, a);
            return DeviceAttributes.of(a);
        } finally {
            release();
        }
    }

    /**
     * Queries the 64-bit capability mask ({@code ibv_query_device_ex}'s {@code device_cap_flags_ex}, the
     * kernel's {@code ib_uverbs_device_cap_flags}); its low 32 bits are {@link DeviceAttributes#deviceCapFlags()}.
     *
     * @return the mask, or the 32-bit {@code ibv_query_device} flags where the provider has no extended query
     */
    public long queryCapabilityFlagsEx() {
        MemorySegment ctx = acquire();
        try {
            return ExtendedCapabilities.query(ctx);
        } finally {
            release();
        }
    }

    /**
     * {@return whether the device executes {@code IBV_WR_ATOMIC_WRITE} ({@code IB_UVERBS_DEVICE_ATOMIC_WRITE} in
     * {@link #queryCapabilityFlagsEx()}; Linux 6.1's Soft-RoCE does not)}
     */
    public boolean supportsAtomicWrite() {
        return (queryCapabilityFlagsEx() & ExtendedCapabilities.ATOMIC_WRITE) != 0;
    }

    /**
     * Queries a port.
     *
     * @param port the port number, from 1
     * @return a copy of {@code struct ibv_port_attr}
     */
    public PortAttributes queryPort(int port) {
        checkPort(port);
        MemorySegment ctx = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_port_attr.allocate(arena);
            Native.Fn extended = extendedQueryPort(ctx);
            if (extended != null) {
                extended.callStatus(ctx, (byte) port, a, ibv_port_attr.sizeof());
            } else {
                // The exported symbol fills the compat prefix (all but port_cap_flags2); the zeroed rest stays 0.
                Calls.IBV_QUERY_PORT.callStatus(ctx, (byte) port, a);
            }
            return new PortAttributes(PortState.of(ibv_port_attr.state(a)), Mtu.of(ibv_port_attr.max_mtu(a)),
                    Mtu.of(ibv_port_attr.active_mtu(a)), ibv_port_attr.gid_tbl_len(a),
                    Short.toUnsignedInt(ibv_port_attr.lid(a)), Short.toUnsignedInt(ibv_port_attr.sm_lid(a)),
                    Integer.toUnsignedLong(ibv_port_attr.max_msg_sz(a)), Byte.toUnsignedInt(ibv_port_attr.link_layer(a)),
                    Byte.toUnsignedInt(ibv_port_attr.active_width(a)), Byte.toUnsignedInt(ibv_port_attr.active_speed(a)),
                    Byte.toUnsignedInt(ibv_port_attr.phys_state(a)), ibv_port_attr.port_cap_flags(a),
                    Short.toUnsignedInt(ibv_port_attr.port_cap_flags2(a)),
                    Short.toUnsignedInt(ibv_port_attr.pkey_tbl_len(a)), Byte.toUnsignedInt(ibv_port_attr.lmc(a)),
                    Byte.toUnsignedInt(ibv_port_attr.max_vl_num(a)), Byte.toUnsignedInt(ibv_port_attr.sm_sl(a)),
                    Byte.toUnsignedInt(ibv_port_attr.subnet_timeout(a)),
                    Byte.toUnsignedInt(ibv_port_attr.init_type_reply(a)), ibv_port_attr.bad_pkey_cntr(a),
                    ibv_port_attr.qkey_viol_cntr(a), Byte.toUnsignedInt(ibv_port_attr.flags(a)));
        } finally {
            release();
        }
    }

    /** {@return whether {@link #queryPort} reaches all of {@code ibv_port_attr} through verbs_context.query_port} */
    boolean queriesFullPortAttributes() {
        try {
            return extendedQueryPort(acquire()) != null;
        } finally {
            release();
        }
    }

    /**
     * What verbs.h's inline {@code ibv_query_port} calls when it can: {@code verbs_context.query_port},
     * which takes the size of {@code struct ibv_port_attr} and so fills all of it. {@code null} when the
     * context is not an extended one or the library's verbs_context predates the field
     * ({@code verbs_get_ctx_op}'s checks).
     */
    private static Native.Fn extendedQueryPort(MemorySegment ctx) {
        MemorySegment fn = VerbsContextOps.op(ctx, verbs_context.query_port$offset());
        return fn.equals(MemorySegment.NULL) ? null : ProviderCalls.QUERY_PORT.at(fn);
    }

    /**
     * Reads one GID table entry.
     *
     * @param port the port number, from 1
     * @param index the table index, from 0
     * @return the GID ({@link Gid#ZERO} for an unused entry)
     */
    public Gid queryGid(int port, int index) {
        checkPort(port);
        if (index < 0) {
            throw new IllegalArgumentException("GID index must be >= 0, got " + index);
        }
        MemorySegment ctx = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment gid = ibv_gid.allocate(arena);
            Calls.IBV_QUERY_GID.callStatus(ctx, (byte) port, index, gid);
            return Gid.read(gid, 0);
        } finally {
            release();
        }
    }

    /**
     * Reads the used entries of a port's GID table.
     *
     * @param port the port number, from 1
     * @return index → GID for every non-zero entry, in index order
     * @see #queryGidTable(int) the same entries with their type (RoCE v1/v2) and network device
     */
    public List<IndexedGid> gidTable(int port) {
        checkPort(port);
        if (Calls.Gid.available()) {
            return queryGidTable(port).stream().map(e -> new IndexedGid(e.index(), e.gid())).toList();
        }
        // rdma-core before 32: one ibv_query_gid per index.
        int len = queryPort(port).gidTableLength();
        List<IndexedGid> out = new ArrayList<>();
        for (int i = 0; i < len; i++) {
            Gid g;
            try {
                g = queryGid(port, i);
            } catch (RdmaException e) {
                continue; // RoCE tables have holes that report EINVAL/ENODATA
            }
            if (!g.isZero()) {
                out.add(new IndexedGid(i, g));
            }
        }
        return List.copyOf(out);
    }

    /**
     * Reads one GID table entry with its type and network device ({@code ibv_query_gid_ex}).
     *
     * @param port the port number, from 1
     * @param index the table index, from 0
     * @return the entry, empty when the index is unused
     * @throws RdmaException with {@code EINVAL} for an index beyond the table, {@code EOPNOTSUPP} when
     *         libibverbs predates the call (rdma-core 32)
     */
    public Optional<GidEntry> queryGidEntry(int port, int index) {
        checkPort(port);
        if (index < 0) {
            throw new IllegalArgumentException("GID index must be >= 0, got " + index);
        }
        Native.Fn fn = Calls.Gid.queryGidEx();
        MemorySegment ctx = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entry = ibv_gid_entry.allocate(arena);
            // What verbs.h's inline ibv_query_gid_ex passes: no flags, and our idea of the struct's size.
            int rc = (int) fn.invoke(ctx, port, index, entry, 0, ibv_gid_entry.sizeof());
            if (rc == Errno.ENODATA) {
                return Optional.empty();
            }
            if (rc != 0) {
                // rdma-core returns the errno itself; -1 would mean it is in errno.
                throw RdmaException.of(fn.name(), rc > 0 ? rc : Native.lastErrno(),
                        "port " + port + ", GID index " + index);
            }
            return Optional.of(readGidEntry(entry));
        } finally {
            release();
        }
    }

    /**
     * Reads the used entries of every port's GID table in one call ({@code ibv_query_gid_table}).
     *
     * @return the entries, ordered by port and index
     * @throws RdmaException with {@code EOPNOTSUPP} when libibverbs predates the call (rdma-core 32)
     */
    public List<GidEntry> queryGidTable() {
        Native.Fn fn = Calls.Gid.queryGidTable();
        // The kernel fails with EINVAL rather than truncate, so make room for every entry of every port.
        long capacity = 0;
        int ports = queryDevice().physicalPortCount();
        for (int p = 1; p <= ports; p++) {
            capacity += queryPort(p).gidTableLength();
        }
        if (capacity == 0) {
            return List.of();
        }
        MemorySegment ctx = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entries = arena.allocate(MemoryLayout.sequenceLayout(capacity, ibv_gid_entry.layout()));
            long n = (long) fn.invoke(ctx, entries, capacity, 0, ibv_gid_entry.sizeof());
            if (n < 0) {
                // ssize_t: the count, or minus the errno.
                throw RdmaException.of(fn.name(), (int) -n, null);
            }
            List<GidEntry> out = new ArrayList<>((int) n);
            for (long i = 0; i < n; i++) {
                out.add(readGidEntry(ibv_gid_entry.asSlice(entries, i)));
            }
            out.sort(Comparator.comparingInt(GidEntry::port).thenComparingInt(GidEntry::index));
            return List.copyOf(out);
        } finally {
            release();
        }
    }

    /**
     * Reads the used entries of one port's GID table.
     *
     * @param port the port number, from 1
     * @return the port's entries in index order
     * @throws RdmaException with {@code EOPNOTSUPP} when libibverbs predates the call (rdma-core 32)
     */
    public List<GidEntry> queryGidTable(int port) {
        checkPort(port);
        return queryGidTable().stream().filter(e -> e.port() == port).toList();
    }

    private static GidEntry readGidEntry(MemorySegment e) {
        return new GidEntry(ibv_gid_entry.port_num(e), ibv_gid_entry.gid_index(e),
                Gid.read(e, ibv_gid_entry.gid$offset()), GidType.of(ibv_gid_entry.gid_type(e)),
                ibv_gid_entry.ndev_ifindex(e));
    }

    /**
     * A GID with its table index.
     *
     * @param index the index in the port's table
     * @param gid the GID
     */
    public record IndexedGid(int index, Gid gid) {
    }

    /**
     * Allocates a protection domain.
     *
     * @return the PD, closed with this context at the latest
     */
    public ProtectionDomain allocateProtectionDomain() {
        MemorySegment ctx = acquire();
        try {
            try {
                return new ProtectionDomain(this, Calls.IBV_ALLOC_PD.callPointer(ctx));
            } catch (RdmaException e) {
                throw DeviceLimits.explain(e, deviceName(), this::queryDevice, DeviceLimits.Kind.PROTECTION_DOMAIN, null);
            }
        } finally {
            release();
        }
    }

    /**
     * Opens an XRC domain of its own ({@code ibv_open_xrcd} with no file, {@code O_CREAT}).
     *
     * @return the domain, closed with this context at the latest
     * @throws RdmaUnsupportedException (EOPNOTSUPP) when the device has no XRC, as Soft-RoCE
     */
    public XrcDomain openXrcDomain() {
        MemorySegment ctx = acquire();
        try {
            return XrcDomain.open(this, ctx);
        } finally {
            release();
        }
    }

    /**
     * Creates a completion channel: a file descriptor that becomes readable when an armed CQ gets a
     * completion.
     *
     * @return the channel, in non-blocking mode
     */
    public CompletionChannel createCompletionChannel() {
        MemorySegment ctx = acquire();
        try {
            return new CompletionChannel(this, Calls.IBV_CREATE_COMP_CHANNEL.callPointer(ctx));
        } finally {
            release();
        }
    }

    /**
     * Creates a completion queue.
     *
     * @param capacity minimum number of entries; the device may round up
     * @param channel the channel notifications go to, or {@code null} for a polled-only CQ
     * @param completionVector interrupt vector, from 0 to {@link #completionVectorCount()} - 1
     * @return the CQ
     */
    public CompletionQueue createCompletionQueue(int capacity, CompletionChannel channel, int completionVector) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("CQ capacity must be > 0, got " + capacity);
        }
        // The kernel accepts a channel of the same device file only: the same native context, which
        // another Java object (a shared context, another id's) may wrap.
        if (channel != null && channel.context().handle.address() != handle.address()) {
            throw new IllegalArgumentException(channel + " belongs to another device context");
        }
        MemorySegment ctx = acquire();
        try {
            if (channel == null) {
                return new CompletionQueue(this, null, createCq(ctx, capacity, MemorySegment.NULL, MemorySegment.NULL,
                        completionVector), -1);
            }
            MemorySegment ch = channel.acquire();
            int slot = channel.reserve();
            boolean made = false;
            try {
                // The CQ's context carries its slot in the channel: an event finds its CQ by index.
                MemorySegment cq = createCq(ctx, capacity, MemorySegment.ofAddress(slot + 1L), ch, completionVector);
                CompletionQueue q = new CompletionQueue(this, channel, cq, slot);
                channel.fill(slot, q);
                made = true;
                return q;
            } finally {
                if (!made) {
                    channel.free(slot);
                }
                channel.release();
            }
        } finally {
            release();
        }
    }

    /** {@code ibv_create_cq}, its failure explained by the limit that refused it ({@link DeviceLimits}). */
    private MemorySegment createCq(MemorySegment ctx, int capacity, MemorySegment cqContext, MemorySegment channel,
            int completionVector) {
        try {
            return Calls.IBV_CREATE_CQ.callPointer(ctx, capacity, cqContext, channel, completionVector);
        } catch (RdmaException e) {
            throw DeviceLimits.explain(e, deviceName(), this::queryDevice, DeviceLimits.Kind.COMPLETION_QUEUE,
                    DeviceLimits.cq(capacity));
        }
    }

    /**
     * For a shared context ({@link CmId#sharedContext()}) whose device was removed
     * ({@code RDMA_CM_EVENT_DEVICE_REMOVAL}), once nothing made through it is open any more: lets go of
     * librdmacm's context of the device, which the kernel's removal of a Soft-RoCE device waits for and which
     * librdmacm does not close by itself when it was its only device ({@link RemovedDevice}). This object is
     * forgotten (a device added again gets a new one) but not closed: that would close what others made on it.
     *
     * @return whether the device is let go of; {@code false}: something made through this object is still
     *         open, or the kernel still lists the device, so call again a little later
     */
    public synchronized boolean releaseRemoved() {
        SHARED.remove(handle.address(), this);
        // Once let go of, never again: librdmacm may have freed the native context since.
        released = released || !owned && !hasChildren() && RemovedDevice.release(handle);
        return released;
    }

    /**
     * {@return the process-wide context for a native context librdmacm opened, made on first use}
     *
     * @param verbs {@code cm_id->verbs}
     */
    static RdmaContext shared(MemorySegment verbs) {
        return SHARED.compute(verbs.address(),
                (a, c) -> c == null || c.isClosed() ? new RdmaContext(verbs, false) : c);
    }

    /** {@return the file descriptor that becomes readable when an asynchronous event is pending} */
    public int asyncFd() {
        try {
            return ibv_context.async_fd(acquire());
        } finally {
            release();
        }
    }

    /**
     * Waits for the next asynchronous event (port changes, QP and CQ errors), copies and acknowledges it.
     *
     * @param timeout how long to wait; {@link Duration#ZERO} to only check
     * @return the event, or {@code null} when none arrived in time
     */
    public AsyncEvent awaitAsyncEvent(Duration timeout) {
        return asyncEvents.await(timeout);
    }

    private static void checkPort(int port) {
        if (port < 1 || port > 255) {
            throw new IllegalArgumentException("port numbers run from 1 to 255, got " + port);
        }
    }

    @Override
    void destroy() {
        if (owned) {
            Calls.IBV_CLOSE_DEVICE.callStatus(handle);
        }
    }

    @Override
    public String toString() {
        return "RdmaContext[" + deviceName + "]";
    }
}
