package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import rdmaflux.verbs.ffi.ibv_async_event;
import rdmaflux.verbs.ffi.ibv_qp;

/**
 * Reads one context's asynchronous events ({@code ibv_get_async_event}): waits on the context's async fd,
 * copies each event into an {@link AsyncEvent} and acknowledges it at once, since an unacknowledged QP or
 * CQ event makes {@code ibv_destroy_qp}/{@code ibv_destroy_cq} block forever.
 *
 * <p>Threads: any; one read at a time (under {@link #lock}, which guards the event buffer). The context's
 * lease is held only while reading, never while waiting, so closing the context on another thread never
 * waits on a reader.
 */
final class AsyncEventReader {
    private final RdmaContext context;
    private volatile boolean nonBlocking;
    /**
     * Where {@code ibv_get_async_event} writes, made on the first read; guarded by {@link #lock}. Reused, so
     * a watcher that checks for events on a timer allocates nothing while none arrive.
     */
    private MemorySegment event;
    private final Object lock = new Object();

    AsyncEventReader(RdmaContext context) {
        this.context = context;
    }

    /** See {@link RdmaContext#awaitAsyncEvent(Duration)}. */
    AsyncEvent await(Duration timeout) {
        int fd = context.asyncFd();
        if (!nonBlocking) {
            Posix.setNonBlocking(fd, true);
            nonBlocking = true;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        for (;;) {
            AsyncEvent e = tryRead();
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

    private AsyncEvent tryRead() {
        MemorySegment ctx = context.acquire();
        try {
            synchronized (lock) {
                return tryRead(ctx);
            }
        } finally {
            context.release();
        }
    }

    private AsyncEvent tryRead(MemorySegment ctx) {
        assert Thread.holdsLock(lock);
        MemorySegment ev = event;
        if (ev == null) {
            ev = event = ibv_async_event.allocate(Arena.ofAuto());
        }
        if (!Calls.getAsyncEvent(ctx, ev)) {
            return null;
        }
        try {
            AsyncEventType type = AsyncEventType.of(ibv_async_event.event_type(ev));
            MemorySegment element = ibv_async_event.element(ev);
            int port = isPortEvent(type) ? ibv_async_event.element.port_num(element) : 0;
            int qpn = isQpEvent(type)
                    ? ibv_qp.qp_num(ibv_async_event.element.qp(element).reinterpret(ibv_qp.sizeof())) : -1;
            return new AsyncEvent(type, port, qpn);
        } finally {
            Calls.Plain.ackAsyncEvent(ev);
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
}
