package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.verbs.ffi.RdmaH;
import rdmaflux.verbs.ffi.rdma_cm_event;
import rdmaflux.verbs.ffi.rdma_event_channel;

/**
 * A connection manager event channel ({@code struct rdma_event_channel}): the file descriptor all events
 * of its ids arrive on.
 *
 * <p>The descriptor is non-blocking. {@link #tryGetEvent()} copies each event into an immutable
 * {@link CmEvent} and acknowledges the native event before returning: an unacknowledged event makes
 * {@code rdma_destroy_id} block forever. Closing the channel closes its ids first.
 */
public final class EventChannel extends NativeResource {
    private final int fd;
    private final Map<Long, CmId> ids = new ConcurrentHashMap<>();

    private EventChannel(MemorySegment channel) {
        super(Rank.EVENT_CHANNEL, channel.reinterpret(rdma_event_channel.sizeof()));
        this.fd = rdma_event_channel.fd(handle);
        Posix.setNonBlocking(fd, true);
    }

    /**
     * Creates an event channel.
     *
     * @return the channel
     * @throws RdmaUnavailableException when RDMA is not usable here
     */
    public static EventChannel create() {
        Rdma.ensureAvailable();
        return new EventChannel(Calls.RDMA_CREATE_EVENT_CHANNEL.callPointer());
    }

    /** @return the file descriptor that becomes readable when an event is pending */
    public int fd() {
        checkOpen();
        return fd;
    }

    /**
     * Creates an id on this channel.
     *
     * @param portSpace {@link PortSpace#TCP} for connections (RC), {@link PortSpace#UDP} for datagrams
     *                  and multicast (UD)
     * @return the id
     */
    public CmId createId(PortSpace portSpace) {
        MemorySegment ch = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            Calls.RDMA_CREATE_ID.callInt(ch, out, MemorySegment.NULL, portSpace.value());
            return register(new CmId(this, out.get(ValueLayout.ADDRESS, 0), portSpace));
        } finally {
            release();
        }
    }

    private CmId register(CmId id) {
        ids.put(id.handle.address(), id);
        return id;
    }

    void forget(CmId id) {
        ids.remove(id.handle.address());
    }

    /**
     * Reads one pending event without waiting.
     *
     * @return the event, or {@code null} when none is pending
     */
    public CmEvent tryGetEvent() {
        MemorySegment ch = acquire();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int rc = (int) Calls.RDMA_GET_CM_EVENT.invoke(ch, out);
            if (rc != 0) {
                int errno = Native.lastErrno();
                if (errno == Errno.EAGAIN) {
                    return null;
                }
                throw RdmaException.of("rdma_get_cm_event", errno, null);
            }
            MemorySegment ev = out.get(ValueLayout.ADDRESS, 0).reinterpret(rdma_cm_event.sizeof());
            try {
                return copy(ev);
            } finally {
                Calls.RDMA_ACK_CM_EVENT.callInt(ev);
            }
        } finally {
            release();
        }
    }

    /**
     * Waits for the next event.
     *
     * @param timeout the longest wait
     * @return the event, or {@code null} on timeout
     */
    public CmEvent awaitEvent(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        boolean[] ready = new boolean[1];
        int[] fds = {fd};
        for (;;) {
            CmEvent e = tryGetEvent();
            if (e != null) {
                return e;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            Posix.pollIn(fds, ready, (int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
        }
    }

    private CmEvent copy(MemorySegment ev) {
        CmEventType type = CmEventType.of(rdma_cm_event.event(ev));
        int status = rdma_cm_event.status(ev);
        MemorySegment listen = rdma_cm_event.listen_id(ev);
        MemorySegment idPtr = rdma_cm_event.id(ev);
        CmId listenId = listen.equals(MemorySegment.NULL) ? null : ids.get(listen.address());
        CmId id;
        if (type == CmEventType.CONNECT_REQUEST && listenId != null) {
            // librdmacm created a new id for the request, on the listener's channel.
            id = register(new CmId(this, idPtr, listenId.portSpace()));
        } else {
            id = ids.get(idPtr.address());
        }
        PortSpace ps = id != null ? id.portSpace() : listenId != null ? listenId.portSpace() : PortSpace.TCP;
        MemorySegment param = rdma_cm_event.param(ev);
        ConnectionParameters conn = null;
        UdParameters ud = null;
        if (ps == PortSpace.UDP || ps == PortSpace.IPOIB) {
            MemorySegment u = rdma_cm_event.param.ud(param);
            ud = new UdParameters(ConnectionParameters.copyPrivateData(
                    rdmaflux.verbs.ffi.rdma_ud_param.private_data(u), rdmaflux.verbs.ffi.rdma_ud_param.private_data_len(u)),
                    addressHandleOf(u), rdmaflux.verbs.ffi.rdma_ud_param.qp_num(u),
                    rdmaflux.verbs.ffi.rdma_ud_param.qkey(u));
        } else {
            conn = ConnectionParameters.fromNative(rdma_cm_event.param.conn(param));
        }
        return new CmEvent(type, status, id, listenId, conn, ud);
    }

    private static AddressHandleAttributes addressHandleOf(MemorySegment ud) {
        MemorySegment ah = rdmaflux.verbs.ffi.rdma_ud_param.ah_attr(ud);
        // Error events carry an all-zero ah_attr (port 0), which is no address at all.
        return rdmaflux.verbs.ffi.ibv_ah_attr.port_num(ah) == 0 ? null : AddressHandleAttributes.fromNative(ah);
    }

    @Override
    void destroy() {
        RdmaH.rdma_destroy_event_channel(handle);
    }

    @Override
    public String toString() {
        return "EventChannel[fd=" + fd + "]";
    }
}
