package rdmaflux.cm.internal.cq;

import rdmaflux.cm.internal.loop.CmEventLoop;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.internal.util.CmLog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import rdmaflux.verbs.CmId;
import rdmaflux.verbs.RdmaContext;

/**
 * The per-device resources of one {@link Loops}: one {@link DeviceResources} per device (by its shared
 * context), made on first use and closed with the loops. The loops hold it as their
 * {@link Loops.Attachment} and close it once every handle on them released what it had, before their
 * completion threads end: the protection domains go before the completion channels, as every connection
 * has destroyed its queue pair and closed its regions by then.
 *
 * <p>A removed device's resources go before the loops end: see {@link DeviceResources}. Each device's
 * {@link DeviceWatch} hears of the removal; the resources are dropped from here at once (a device added
 * again gets new ones) and closed once the last connection, endpoint or group on the device released them.
 *
 * <p>Threads: devices are made and looked up on the loops' CM loops (guarded by {@code this}: the
 * client's and the servers' are two threads); {@link #of} and {@link #domainCount()} from any thread;
 * {@link #close()} once, by the loops as they stop, on the thread that stops them.
 */
public final class Devices implements Loops.Attachment {
    /** How often, and how many times, a removed device is offered back to librdmacm (10 s in all). */
    private static final long FORGET_INTERVAL_NANOS = 50_000_000L;
    private static final int FORGET_ATTEMPTS = 200;

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
     * CM loop: what the loops keep for {@code id}'s device, made on first use, with a {@link DeviceWatch} on
     * the id's local address that hears of the device's removal.
     *
     * @param id an id bound to a device (its address resolved or bound)
     * @return its resources
     * @throws IllegalStateException when the loops are disposed and their resources closed
     */
    public DeviceResources device(CmId id) {
        assert loops.inCmLoop() : "a CM loop of the loops only";
        RdmaContext context = id.sharedContext();
        DeviceResources d;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("these RdmaLoops are disposed");
            }
            d = devices.get(context);
            if (d != null) {
                return d;
            }
            d = new DeviceResources(this, loops, context);
            devices.put(context, d);
        }
        DeviceResources made = d;
        CmEventLoop cm = loops.currentCm();
        made.watch(DeviceWatch.start(cm, made, id.localAddress(), () -> removed(made)));
        return made;
    }

    /**
     * CM loop: {@code d}'s device was removed. New ids on a device added again get new resources (librdmacm
     * gives them a new context); these close once their last holder released them.
     */
    void removed(DeviceResources d) {
        synchronized (this) {
            devices.remove(d.device(), d);
        }
        CmLog.LOG.log(System.Logger.Level.INFO, () -> d.device().deviceName() + " was removed: " + this
                + " closes what it keeps there once every connection, endpoint and group on it has ended");
        if (d.markRemoved()) {
            removedAndReleased(d);
        }
    }

    /**
     * CM loop: a removed device's resources have no holder left. Closes the domain (slabs and regions in it)
     * now, then each completion loop's channel on its own thread, then the watch, and finally asks librdmacm
     * to let go of the device's context ({@link RdmaContext#releaseRemoved()}).
     */
    void removedAndReleased(DeviceResources d) {
        try {
            d.closeDomain();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + d + " failed", e);
        }
        CmEventLoop cm = loops.currentCm();
        java.util.List<CompletionLoop> all = loops.completionLoopList();
        java.util.concurrent.atomic.AtomicInteger left = new java.util.concurrent.atomic.AtomicInteger(all.size());
        for (CompletionLoop loop : all) {
            loop.execute(() -> {
                try {
                    loop.removeDevice(d.device());
                } finally {
                    if (left.decrementAndGet() == 0) {
                        cm.execute(() -> {
                            d.close();
                            forget(cm, d, 0);
                        });
                    }
                }
            });
        }
    }

    /**
     * CM loop: {@link RdmaContext#releaseRemoved()} until it lets go of the device, a while at most: other loops'
     * resources on the device may still be closing.
     */
    private void forget(CmEventLoop cm, DeviceResources d, int attempt) {
        boolean done;
        try {
            done = d.device().releaseRemoved();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "releasing removed " + d + " failed", e);
            return;
        }
        if (done) {
            CmLog.LOG.log(System.Logger.Level.DEBUG, () -> this + " released removed " + d);
        } else if (attempt < FORGET_ATTEMPTS) {
            cm.schedule(() -> forget(cm, d, attempt + 1), FORGET_INTERVAL_NANOS);
        } else {
            CmLog.LOG.log(System.Logger.Level.WARNING, "cannot let go of removed " + d.device().deviceName()
                    + " after " + FORGET_ATTEMPTS + " attempts: something made on it is still open (other RdmaLoops "
                    + "still closing, or objects made through CmId.sharedContext() and not closed), or the kernel "
                    + "still lists it; its removal may wait for this process");
        }
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
