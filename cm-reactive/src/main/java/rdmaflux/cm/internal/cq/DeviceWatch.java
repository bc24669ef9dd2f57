package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.util.CmLog;

import java.net.InetSocketAddress;

import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.PortSpace;

/**
 * An id bound to one of a device's addresses (port 0: nothing listens or connects on it), made with the
 * loops' resources on that device, so that the loops hear of the device's removal even when no connection
 * is on it (idle loops keep a protection domain and completion channels there all the same), and so that
 * librdmacm keeps the device's native context open until those resources are closed: it closes a removed
 * device's context with its last id, and this is the resources' last one.
 *
 * <p>Threads: made, its event handled and closed on the CM loop that made the resources; {@link #close()}
 * also from the thread that stops the loops (the id's close is idempotent and thread-safe).
 */
final class DeviceWatch {
    private final CmEventLoop cm;
    private final CmId id;

    private DeviceWatch(CmEventLoop cm, CmId id) {
        this.cm = cm;
        this.id = id;
    }

    /**
     * CM loop: watches {@code resources}' device through an id bound to {@code local}'s address.
     *
     * @param local an address of the device (a connection's, endpoint's or group's local address)
     * @param removed what runs, on this CM loop, when the device is removed
     * @return the watch, or null when no id could be bound (logged: the device's removal is then heard of
     *         only through the connections on it)
     */
    static DeviceWatch start(CmEventLoop cm, DeviceResources resources, InetSocketAddress local, Runnable removed) {
        assert cm.inLoop() : "CM loop only";
        CmId id = null;
        try {
            id = cm.channel().createId(PortSpace.TCP);
            id.bind(new InetSocketAddress(local.getAddress(), 0));
            cm.register(id, e -> {
                if (e.type() == CmEventType.DEVICE_REMOVAL) {
                    removed.run();
                }
            });
            return new DeviceWatch(cm, id);
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "cannot watch " + resources + " for its removal through "
                    + local.getAddress() + ": its resources then stay until the loops are disposed", e);
            if (id != null) {
                id.close();
            }
            return null;
        }
    }

    /** Destroys the id; any thread, idempotent. On the CM loop its handler is detached first. */
    void close() {
        if (cm.inLoop()) {
            cm.unregister(id);
        }
        try {
            id.close();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + id + " failed", e);
        }
    }
}
