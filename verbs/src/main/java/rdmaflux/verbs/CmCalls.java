package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import rdmaflux.verbs.ffi.ibv_qp_init_attr;
import rdmaflux.verbs.ffi.rdma_conn_param;
import rdmaflux.verbs.ffi.sockaddr_storage;

/**
 * librdmacm's connection-manager calls on the connection setup path, invoked exactly with typed
 * arguments, and the per-thread native scratch memory their arguments are written to.
 *
 * <p>Why not {@link Native.Fn#callInt}: that generic path boxes every argument into an array and goes
 * through a spreading method handle, and the callers used to allocate a confined {@link Arena} per call
 * for a sockaddr or a {@code struct rdma_conn_param}. Connection setup runs these calls a handful of
 * times per connection, typically before the JIT has compiled them, where that per-call work costs
 * more than the system call it wraps. librdmacm copies every argument these calls take before
 * returning, so one scratch area per thread, overwritten call after call, is enough.
 *
 * <p>The errno semantics are {@link Native.Fn#callInt}'s: a negative result throws the typed
 * {@link RdmaException} for the errno captured by that very call.
 *
 * <p>Only referenced from instance methods of {@link EventChannel} and {@link CmId}, which exist only
 * after {@link Rdma#ensureAvailable()}, so loading this class never links against a missing librdmacm.
 */
final class CmCalls {
    private static final MethodHandle CREATE_ID = Calls.RDMA_CREATE_ID.handle();
    private static final MethodHandle DESTROY_ID = Calls.RDMA_DESTROY_ID.handle();
    private static final MethodHandle BIND_ADDR = Calls.RDMA_BIND_ADDR.handle();
    private static final MethodHandle RESOLVE_ADDR = Calls.RDMA_RESOLVE_ADDR.handle();
    private static final MethodHandle RESOLVE_ROUTE = Calls.RDMA_RESOLVE_ROUTE.handle();
    private static final MethodHandle CREATE_QP = Calls.RDMA_CREATE_QP.handle();
    private static final MethodHandle CONNECT = Calls.RDMA_CONNECT.handle();
    private static final MethodHandle ACCEPT = Calls.RDMA_ACCEPT.handle();
    private static final MethodHandle DISCONNECT = Calls.RDMA_DISCONNECT.handle();
    private static final MethodHandle LISTEN = Calls.RDMA_LISTEN.handle();
    private static final MethodHandle GET_CM_EVENT = Calls.RDMA_GET_CM_EVENT.handle();
    private static final MethodHandle ACK_CM_EVENT = Calls.RDMA_ACK_CM_EVENT.handle();

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private CmCalls() {
    }

    /**
     * One thread's argument memory. Each area is overwritten by the next call on the same thread that
     * uses it; nothing here may be kept past the native call it was written for.
     */
    static final class Scratch {
        private static final long ADDR_SIZE = sockaddr_storage.sizeof();
        private static final long PARAM_SIZE = rdma_conn_param.sizeof();
        private static final long QP_INIT_SIZE = ibv_qp_init_attr.sizeof();
        /** The longest private data {@code rdma_conn_param} can point to (its length is a byte: 255), rounded up. */
        private static final long DATA_SIZE = 256;

        /** The errno capture segment of this thread. */
        final MemorySegment capture = Native.capture();
        /** A pointer-sized out parameter ({@code struct rdma_cm_id **}, {@code struct rdma_cm_event **}). */
        final MemorySegment out;
        /** Source and destination socket addresses. */
        final MemorySegment source;
        final MemorySegment destination;
        /** {@code struct rdma_conn_param} and the private data it points to. */
        final MemorySegment param;
        final MemorySegment data;
        /** {@code struct ibv_qp_init_attr}, which rdma_create_qp also writes the granted capacities back to. */
        final MemorySegment qpInit;

        private Scratch() {
            // Auto: the memory lives as long as the thread's reference to it, like Native's capture buffer.
            MemorySegment all = Arena.ofAuto().allocate(8 + 2 * ADDR_SIZE + PARAM_SIZE + DATA_SIZE + QP_INIT_SIZE, 16);
            long at = 0;
            out = all.asSlice(at, 8);
            at += 8;
            source = all.asSlice(at, ADDR_SIZE);
            at += ADDR_SIZE;
            destination = all.asSlice(at, ADDR_SIZE);
            at += ADDR_SIZE;
            param = all.asSlice(at, PARAM_SIZE);
            at += PARAM_SIZE;
            data = all.asSlice(at, DATA_SIZE);
            at += DATA_SIZE;
            qpInit = all.asSlice(at, QP_INIT_SIZE);
        }

        /** {@return {@link #qpInit}, zeroed} */
        MemorySegment qpInit() {
            qpInit.fill((byte) 0);
            return qpInit;
        }
    }

    /** {@return the calling thread's scratch memory} */
    static Scratch scratch() {
        return SCRATCH.get();
    }

    private static void check(String name, int rc, MemorySegment capture) {
        if (rc < 0) {
            throw RdmaException.of(name, Native.errno(capture), null);
        }
    }

    private static RuntimeException rethrow(String name, Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(name + " threw " + t, t);
    }

    /** rdma_create_id; returns the new id's address. */
    static MemorySegment createId(MemorySegment channel, int portSpace) {
        Scratch s = SCRATCH.get();
        int rc;
        try {
            rc = (int) CREATE_ID.invokeExact(s.capture, channel, s.out, MemorySegment.NULL, portSpace);
        } catch (Throwable t) {
            throw rethrow("rdma_create_id", t);
        }
        check("rdma_create_id", rc, s.capture);
        return s.out.get(ValueLayout.ADDRESS, 0);
    }

    static void destroyId(MemorySegment id) {
        MemorySegment capture = Native.capture();
        int rc;
        try {
            rc = (int) DESTROY_ID.invokeExact(capture, id);
        } catch (Throwable t) {
            throw rethrow("rdma_destroy_id", t);
        }
        check("rdma_destroy_id", rc, capture);
    }

    /** rdma_bind_addr with the address already in {@code s.source}. */
    static void bindAddr(Scratch s, MemorySegment id) {
        int rc;
        try {
            rc = (int) BIND_ADDR.invokeExact(s.capture, id, s.source);
        } catch (Throwable t) {
            throw rethrow("rdma_bind_addr", t);
        }
        check("rdma_bind_addr", rc, s.capture);
    }

    /** rdma_resolve_addr; {@code source} is {@code s.source} or NULL, the destination is in {@code s.destination}. */
    static void resolveAddr(Scratch s, MemorySegment id, MemorySegment source, int timeoutMillis) {
        int rc;
        try {
            rc = (int) RESOLVE_ADDR.invokeExact(s.capture, id, source, s.destination, timeoutMillis);
        } catch (Throwable t) {
            throw rethrow("rdma_resolve_addr", t);
        }
        check("rdma_resolve_addr", rc, s.capture);
    }

    static void resolveRoute(MemorySegment id, int timeoutMillis) {
        MemorySegment capture = Native.capture();
        int rc;
        try {
            rc = (int) RESOLVE_ROUTE.invokeExact(capture, id, timeoutMillis);
        } catch (Throwable t) {
            throw rethrow("rdma_resolve_route", t);
        }
        check("rdma_resolve_route", rc, capture);
    }

    static void listen(MemorySegment id, int backlog) {
        MemorySegment capture = Native.capture();
        int rc;
        try {
            rc = (int) LISTEN.invokeExact(capture, id, backlog);
        } catch (Throwable t) {
            throw rethrow("rdma_listen", t);
        }
        check("rdma_listen", rc, capture);
    }

    /** rdma_create_qp with the attributes in {@code s.qpInit}. */
    static void createQp(Scratch s, MemorySegment id, MemorySegment pd) {
        int rc;
        try {
            rc = (int) CREATE_QP.invokeExact(s.capture, id, pd, s.qpInit);
        } catch (Throwable t) {
            throw rethrow("rdma_create_qp", t);
        }
        check("rdma_create_qp", rc, s.capture);
    }

    /** rdma_connect with the parameters in {@code s.param}. */
    static void connect(Scratch s, MemorySegment id) {
        int rc;
        try {
            rc = (int) CONNECT.invokeExact(s.capture, id, s.param);
        } catch (Throwable t) {
            throw rethrow("rdma_connect", t);
        }
        check("rdma_connect", rc, s.capture);
    }

    /** rdma_accept with the parameters in {@code s.param}. */
    static void accept(Scratch s, MemorySegment id) {
        int rc;
        try {
            rc = (int) ACCEPT.invokeExact(s.capture, id, s.param);
        } catch (Throwable t) {
            throw rethrow("rdma_accept", t);
        }
        check("rdma_accept", rc, s.capture);
    }

    static void disconnect(MemorySegment id) {
        MemorySegment capture = Native.capture();
        int rc;
        try {
            rc = (int) DISCONNECT.invokeExact(capture, id);
        } catch (Throwable t) {
            throw rethrow("rdma_disconnect", t);
        }
        check("rdma_disconnect", rc, capture);
    }

    /**
     * rdma_get_cm_event on a non-blocking channel.
     *
     * @return the event's address, or 0 when none is pending (EAGAIN)
     */
    static long getEvent(Scratch s, MemorySegment channel) {
        int rc;
        try {
            rc = (int) GET_CM_EVENT.invokeExact(s.capture, channel, s.out);
        } catch (Throwable t) {
            throw rethrow("rdma_get_cm_event", t);
        }
        if (rc != 0) {
            int errno = Native.errno(s.capture);
            if (errno == Errno.EAGAIN) {
                return 0;
            }
            throw RdmaException.of("rdma_get_cm_event", errno, null);
        }
        return s.out.get(ValueLayout.JAVA_LONG, 0);
    }

    static void ackEvent(Scratch s, MemorySegment event) {
        int rc;
        try {
            rc = (int) ACK_CM_EVENT.invokeExact(s.capture, event);
        } catch (Throwable t) {
            throw rethrow("rdma_ack_cm_event", t);
        }
        check("rdma_ack_cm_event", rc, s.capture);
    }
}
