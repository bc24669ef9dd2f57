package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.internal.util.CmLog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import rdmaflux.verbs.RdmaContext;

/**
 * The per-device resources of one {@link Loops}: one {@link DeviceResources} per device (by its shared
 * context), made on first use and closed with the loops. The loops hold it as their
 * {@link Loops.Attachment} and close it once every handle on them released what it had, before their
 * completion threads end: the protection domains go before the completion channels, as every connection
 * has destroyed its queue pair and closed its regions by then.
 *
 * <p>Threads: devices are made and looked up on the loops' CM loops (guarded by {@code this}: the
 * client's and the servers' are two threads); {@link #of} and {@link #domainCount()} from any thread;
 * {@link #close()} once, by the loops as they stop, on the thread that stops them.
 */
public final class Devices implements Loops.Attachment {
    private final Loops loops;
    /** Guarded by this. */
    private final Map<RdmaContext, DeviceResources> devices = new HashMap<>();
    /** Set, under this, once closed: no device may be added after. */
    private boolean closed;

    private Devices(Loops loops) {
        this.loops = loops;
    }

    /**
     * {@return the per-device resources of {@code loops}, made on first use; any thread}
     *
     * @throws IllegalStateException when the loops are disposed and their resources closed
     */
    public static Devices of(Loops loops) {
        return loops.attachment(Devices.class, Devices::new);
    }

    /**
     * CM loop: what the loops keep for a device, made on first use.
     *
     * @param device the device's shared context ({@link rdmaflux.verbs.CmId#sharedContext()})
     * @return its resources
     * @throws IllegalStateException when the loops are disposed and their resources closed
     */
    public synchronized DeviceResources device(RdmaContext device) {
        assert loops.inCmLoop() : "a CM loop of the loops only";
        if (closed) {
            throw new IllegalStateException("these RdmaLoops are disposed");
        }
        return devices.computeIfAbsent(device, d -> new DeviceResources(loops, d));
    }

    /** {@return the protection domains made so far (tests); any thread} */
    public int domainCount() {
        List<DeviceResources> all;
        synchronized (this) {
            all = new ArrayList<>(devices.values());
        }
        int n = 0;
        for (DeviceResources d : all) {
            n += d.hasDomain() ? 1 : 0;
        }
        return n;
    }

    /**
     * Closes every device's resources (their protection domains), once; by the loops as they stop, after
     * every connection on them destroyed its queue pair. A failure is logged and the others still close.
     */
    @Override
    public void close() {
        assert loops.isDisposed() : "only disposed loops close their devices";
        List<DeviceResources> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(devices.values());
            devices.clear();
        }
        for (DeviceResources d : all) {
            try {
                d.close();
            } catch (RuntimeException e) {
                CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + d + " failed", e);
            }
        }
    }

    @Override
    public String toString() {
        return "Devices[" + loops + "]";
    }
}
