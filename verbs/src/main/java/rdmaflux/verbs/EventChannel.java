package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

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

    /** {@return the file descriptor that becomes readable when an event is pending} */
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
        try {
            return register(new CmId(this, CmCalls.createId(ch, portSpace.value()), portSpace));
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
        try {
            CmCalls.Scratch s = CmCalls.scratch();
            long ev = CmCalls.getEvent(s, ch);
            if (ev == 0) {
                return null;
            }
            MemorySegment event = MemorySegment.ofAddress(ev).reinterpret(Layout.EVENT_SIZE);
            try {
                return copy(event);
            } finally {
                CmCalls.ackEvent(s, event);
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
        for (;;) {
            CmEvent e = tryGetEvent();
            if (e != null) {
                return e;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            Posix.pollIn(fd, (int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
        }
    }

    private CmEvent copy(MemorySegment ev) {
        // The fixed part and, for connected port spaces, the connection parameters in one bulk copy.
        long[] image = new long[Layout.IMAGE_LONGS];
        MemorySegment.copy(ev, ValueLayout.JAVA_LONG, 0, image, 0, Layout.IMAGE_LONGS);
        CmEventType type = CmEventType.of((int) NativeImage.get(image, Layout.EVENT, 4));
        int status = (int) NativeImage.get(image, Layout.STATUS, 4);
        long listen = NativeImage.get(image, Layout.LISTEN_ID, 8);
        long idPtr = NativeImage.get(image, Layout.ID, 8);
        CmId listenId = listen == 0 ? null : ids.get(listen);
        CmId id;
        if (type == CmEventType.CONNECT_REQUEST && listenId != null) {
            // librdmacm created a new id for the request, on the listener's channel.
            id = register(new CmId(this, MemorySegment.ofAddress(idPtr), listenId.portSpace()));
        } else {
            id = ids.get(idPtr);
        }
        PortSpace ps = id != null ? id.portSpace() : listenId != null ? listenId.portSpace() : PortSpace.TCP;
        ConnectionParameters conn = null;
        UdParameters ud = null;
        if (ps == PortSpace.UDP || ps == PortSpace.IPOIB) {
            MemorySegment u = rdma_cm_event.param.ud(rdma_cm_event.param(ev));
            ud = new UdParameters(ConnectionParameters.copyPrivateData(
                    rdmaflux.verbs.ffi.rdma_ud_param.private_data(u), rdmaflux.verbs.ffi.rdma_ud_param.private_data_len(u)),
                    addressHandleOf(u), rdmaflux.verbs.ffi.rdma_ud_param.qp_num(u),
                    rdmaflux.verbs.ffi.rdma_ud_param.qkey(u));
        } else {
            conn = ConnectionParameters.fromImage(image, Layout.CONN);
        }
        return new CmEvent(type, status, id, listenId, conn, ud);
    }

    /** Offsets in {@code struct rdma_cm_event}; a holder, so loading this class loads no native bindings. */
    private static final class Layout {
        static final long EVENT_SIZE = rdma_cm_event.sizeof();
        static final long ID = rdma_cm_event.id$offset();
        static final long LISTEN_ID = rdma_cm_event.listen_id$offset();
        static final long EVENT = rdma_cm_event.event$offset();
        static final long STATUS = rdma_cm_event.status$offset();
        /** Where {@code param.conn} starts. */
        static final long CONN = rdma_cm_event.param$offset() + rdma_cm_event.param.conn$offset();
        /** The longs {@link #copy} reads: through the end of {@code param.conn}. */
        static final int IMAGE_LONGS = (int) (CONN / 8) + ConnectionParameters.Layout.IMAGE_LONGS;

        private Layout() {
        }
    }

    private static AddressHandleAttributes addressHandleOf(MemorySegment ud) {
        MemorySegment ah = rdmaflux.verbs.ffi.rdma_ud_param.ah_attr(ud);
        // Error events carry an all-zero ah_attr (port 0), which is no address at all.
        return rdmaflux.verbs.ffi.ibv_ah_attr.port_num(ah) == 0 ? null : AddressHandleAttributes.fromNative(ah);
    }

    @Override
    void destroy() {
        Calls.Plain.destroyEventChannel(handle);
    }

    @Override
    public String toString() {
        return "EventChannel[fd=" + fd + "]";
    }
}
