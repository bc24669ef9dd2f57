package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.verbs.ffi.ibv_async_event;
import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_device;
import rdmaflux.verbs.ffi.ibv_device_attr;
import rdmaflux.verbs.ffi.ibv_gid;
import rdmaflux.verbs.ffi.ibv_port_attr;
import rdmaflux.verbs.ffi.ibv_qp;
import rdmaflux.verbs.ffi.RdmaH;

/**
 * An open RDMA device ({@code struct ibv_context}): the parent of protection domains, completion
 * channels and completion queues.
 *
 * <p>Closing it closes everything created from it, QPs first. A context obtained from a connection
 * manager id ({@link CmId#context()}) belongs to librdmacm: closing it frees what was created through it
 * but leaves the device open.
 */
public final class RdmaContext extends NativeResource {
    private final boolean owned;
    private final String deviceName;
    private final Map<Long, CompletionQueue> cqs = new ConcurrentHashMap<>();
    private volatile boolean asyncNonBlocking;

    RdmaContext(MemorySegment context, boolean owned, NativeResource... owners) {
        super(Rank.CONTEXT, context.reinterpret(ibv_context.sizeof()), owners);
        this.owned = owned;
        MemorySegment device = ibv_context.device(handle).reinterpret(ibv_device.sizeof());
        this.deviceName = ibv_device.name(device).getString(0);
    }

    /** @return the device name, e.g. {@code rxe0} */
    public String deviceName() {
        return deviceName;
    }

    /** @return how many completion vectors (interrupt queues) the device has */
    public int completionVectorCount() {
        try {
            return ibv_context.num_comp_vectors(acquire());
        } finally {
            release();
        }
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
            return new DeviceAttributes(ibv_device_attr.fw_ver(a).getString(0),
                    Long.reverseBytes(ibv_device_attr.node_guid(a)), ibv_device_attr.vendor_id(a),
                    ibv_device_attr.vendor_part_id(a), ibv_device_attr.hw_ver(a), ibv_device_attr.max_mr_size(a),
                    ibv_device_attr.max_qp(a), ibv_device_attr.max_qp_wr(a), ibv_device_attr.max_sge(a),
                    ibv_device_attr.max_cq(a), ibv_device_attr.max_cqe(a), ibv_device_attr.max_mr(a),
                    ibv_device_attr.max_pd(a), ibv_device_attr.max_qp_rd_atom(a),
                    ibv_device_attr.max_qp_init_rd_atom(a), ibv_device_attr.atomic_cap(a),
                    ibv_device_attr.max_srq(a), ibv_device_attr.max_srq_wr(a), ibv_device_attr.max_srq_sge(a),
                    ibv_device_attr.max_ah(a), ibv_device_attr.max_mcast_grp(a),
                    ibv_device_attr.max_mcast_qp_attach(a), Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(a)));
        } finally {
            release();
        }
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
            // The exported ibv_query_port fills the compat prefix of the struct; the zeroed rest stays 0.
            MemorySegment a = ibv_port_attr.allocate(arena);
            Calls.IBV_QUERY_PORT.callStatus(ctx, (byte) port, a);
            return new PortAttributes(PortState.of(ibv_port_attr.state(a)), Mtu.of(ibv_port_attr.max_mtu(a)),
                    Mtu.of(ibv_port_attr.active_mtu(a)), ibv_port_attr.gid_tbl_len(a),
                    Short.toUnsignedInt(ibv_port_attr.lid(a)), Short.toUnsignedInt(ibv_port_attr.sm_lid(a)),
                    Integer.toUnsignedLong(ibv_port_attr.max_msg_sz(a)), Byte.toUnsignedInt(ibv_port_attr.link_layer(a)),
                    Byte.toUnsignedInt(ibv_port_attr.active_width(a)), Byte.toUnsignedInt(ibv_port_attr.active_speed(a)),
                    Byte.toUnsignedInt(ibv_port_attr.phys_state(a)));
        } finally {
            release();
        }
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
     */
    public List<IndexedGid> gidTable(int port) {
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
            return new ProtectionDomain(this, Calls.IBV_ALLOC_PD.callPointer(ctx));
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
        if (channel != null && channel.context() != this) {
            throw new IllegalArgumentException(channel + " belongs to another device context");
        }
        MemorySegment ctx = acquire();
        try {
            MemorySegment ch = channel == null ? MemorySegment.NULL : channel.acquire();
            try {
                MemorySegment cq = Calls.IBV_CREATE_CQ.callPointer(ctx, capacity, MemorySegment.NULL, ch,
                        completionVector);
                CompletionQueue q = new CompletionQueue(this, channel, cq);
                cqs.put(cq.address(), q);
                return q;
            } finally {
                if (channel != null) {
                    channel.release();
                }
            }
        } finally {
            release();
        }
    }

    /** @return the completion queue created through this context at that native address */
    CompletionQueue cqAt(long address) {
        return cqs.get(address);
    }

    void forgetCq(long address) {
        cqs.remove(address);
    }

    /** @return the file descriptor that becomes readable when an asynchronous event is pending */
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
        int fd = asyncFd();
        if (!asyncNonBlocking) {
            Posix.setNonBlocking(fd, true);
            asyncNonBlocking = true;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        boolean[] ready = new boolean[1];
        for (;;) {
            AsyncEvent e = tryGetAsyncEvent();
            if (e != null) {
                return e;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            // The lease is not held while blocked, so close() on another thread never waits on us.
            Posix.pollIn(new int[] {fd}, ready, (int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
        }
    }

    private AsyncEvent tryGetAsyncEvent() {
        MemorySegment ctx = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ev = ibv_async_event.allocate(arena);
            int rc = (int) Calls.IBV_GET_ASYNC_EVENT.invoke(ctx, ev);
            if (rc != 0) {
                int errno = Native.lastErrno();
                if (errno == Errno.EAGAIN) {
                    return null;
                }
                throw RdmaException.of("ibv_get_async_event", errno, null);
            }
            try {
                AsyncEventType type = AsyncEventType.of(ibv_async_event.event_type(ev));
                MemorySegment element = ibv_async_event.element(ev);
                int port = isPortEvent(type) ? ibv_async_event.element.port_num(element) : 0;
                int qpn = isQpEvent(type)
                        ? ibv_qp.qp_num(ibv_async_event.element.qp(element).reinterpret(ibv_qp.sizeof())) : -1;
                return new AsyncEvent(type, port, qpn);
            } finally {
                // Unacked QP/CQ events make ibv_destroy_qp/cq block forever.
                RdmaH.ibv_ack_async_event(ev);
            }
        } finally {
            release();
        }
    }

    private static boolean isQpEvent(AsyncEventType t) {
        return switch (t) {
            case QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, COMM_EST, SQ_DRAINED, PATH_MIG, PATH_MIG_ERR,
                 QP_LAST_WQE_REACHED -> true;
            default -> false;
        };
    }

    private static boolean isPortEvent(AsyncEventType t) {
        return switch (t) {
            case PORT_ACTIVE, PORT_ERR, LID_CHANGE, PKEY_CHANGE, SM_CHANGE, CLIENT_REREGISTER, GID_CHANGE -> true;
            default -> false;
        };
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
