package rdmaflux.cm;

import java.lang.System.Logger.Level;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.Consumer;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.EventChannel;

/**
 * The connection manager event loop: one thread, one {@code rdma_event_channel}. Each event is read,
 * copied and acknowledged by {@link EventChannel#tryGetEvent()}, published on {@link #events()}, and
 * handed to the state machine of the id it belongs to (connect requests to their listener).
 *
 * <p>Handlers run on this thread and must not block: they only make non-blocking rdma_cm calls and
 * hand work to the completion loop or the user's scheduler.
 */
final class CmEventLoop extends EventLoop {
    private static volatile CmEventLoop shared;

    private final EventChannel channel;
    private final int[] fds;
    private final Map<CmId, Consumer<CmEvent>> handlers = new IdentityHashMap<>();
    private final Sinks.Many<CmEvent> events = Sinks.many().multicast().directBestEffort();
    private volatile RdmaRecorder recorder = RdmaRecorder.NOOP;

    private CmEventLoop() {
        super("rdmaflux-cm");
        this.channel = EventChannel.create();
        this.fds = new int[] {channel.fd()};
        start();
    }

    /** @return the process-wide loop, created on first use */
    static CmEventLoop shared() {
        CmEventLoop l = shared;
        if (l == null) {
            synchronized (CmEventLoop.class) {
                l = shared;
                if (l == null) {
                    l = new CmEventLoop();
                    shared = l;
                }
            }
        }
        return l;
    }

    EventChannel channel() {
        return channel;
    }

    /** @return every event the loop reads, for observers; it drops what a slow observer cannot take */
    Flux<CmEvent> events() {
        return events.asFlux();
    }

    /** Loop thread only. */
    void register(CmId id, Consumer<CmEvent> handler) {
        handlers.put(id, handler);
    }

    /** Loop thread only. */
    void unregister(CmId id) {
        handlers.remove(id);
    }

    @Override
    int[] fds() {
        return fds;
    }

    @Override
    void onReady(boolean[] ready) {
        if (!ready[0]) {
            return;
        }
        CmEvent e;
        while ((e = channel.tryGetEvent()) != null) {
            recorder.cmEvent(e.type());
            events.tryEmitNext(e);
            CmId target = e.type() == CmEventType.CONNECT_REQUEST ? e.listenId() : e.id();
            Consumer<CmEvent> h = target == null ? null : handlers.get(target);
            if (h == null) {
                orphan(e);
                continue;
            }
            try {
                h.accept(e);
            } catch (RuntimeException ex) {
                LOG.log(Level.ERROR, "handler failed for " + e, ex);
            }
        }
    }

    /** An event for an id nobody handles any more: a connect request is refused, the rest dropped. */
    private void orphan(CmEvent e) {
        if (e.type() == CmEventType.CONNECT_REQUEST && e.id() != null) {
            try {
                e.id().reject(new byte[0]);
            } finally {
                e.id().close();
            }
        }
    }

    void recorder(RdmaRecorder r) {
        this.recorder = r;
    }
}
