package rdmaflux.cm.internal.loop;

import rdmaflux.cm.internal.util.CmLog;

import java.lang.System.Logger.Level;
import java.util.function.Consumer;

import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.EventChannel;

/**
 * The connection manager event loop: one thread, one {@code rdma_event_channel}. Each event is read,
 * copied and acknowledged by {@link EventChannel#tryGetEvent()}, and handed to the handler attached to
 * the id it belongs to ({@link CmId#attachment()}; connect requests go to their listener's).
 *
 * <p>Handlers run on this thread and must not block: they only make non-blocking rdma_cm calls and
 * hand work to the completion loop or the user's scheduler.
 */
public final class CmEventLoop extends EventLoop {
    private final EventChannel channel;
    private final int[] fds;

    /**
     * Creates and starts the loop.
     *
     * @param name the thread's name; the thread starts now
     */
    CmEventLoop(String name) {
        super(name);
        this.channel = EventChannel.create();
        this.fds = new int[] {channel.fd()};
        start();
    }

    /** The channel goes with the thread; closing it destroys ids still on it. */
    @Override
    void onExit() {
        channel.close();
    }

    public EventChannel channel() {
        return channel;
    }

    /** Loop thread only: {@code handler} gets every event of {@code id} from now on. */
    public void register(CmId id, Consumer<CmEvent> handler) {
        assert inLoop() : "loop thread only";
        id.attach(handler);
    }

    /** Loop thread only: events of {@code id} are dropped from now on (connect requests refused). */
    public void unregister(CmId id) {
        assert inLoop() : "loop thread only";
        id.attach(null);
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
            CmId target = e.type() == CmEventType.CONNECT_REQUEST ? e.listenId() : e.id();
            @SuppressWarnings("unchecked")
            Consumer<CmEvent> h = target == null ? null : (Consumer<CmEvent>) target.attachment();
            if (h == null) {
                orphan(e);
                continue;
            }
            try {
                h.accept(e);
            } catch (RuntimeException ex) {
                CmLog.LOG.log(Level.ERROR, "handler failed for " + e, ex);
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
}
