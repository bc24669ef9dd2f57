package rdmaflux.cm.internal.cq;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaDeviceEvents;
import rdmaflux.cm.internal.loop.CompletionLoop;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.internal.memory.Registrations;

import java.util.HashMap;
import java.util.Map;

import reactor.core.publisher.Flux;
import rdmaflux.verbs.AsyncEvent;
import rdmaflux.verbs.Errno;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaResourceException;

/**
 * What one {@link Loops} keeps for one device, shared by every connection, endpoint and group of those
 * loops on it: the protection domain with its registration cache and buffer slabs ({@link Registrations}),
 * the device's event stream, and the CQs each completion loop's connections share on the device
 * ({@link SharedCq.Group}, {@link ConnectionOptions#sharedCompletionQueue()}). {@link Devices} makes it on
 * first use and closes it with the loops, once every connection on them released what it had, so the
 * domain outlives every queue pair and region made in it.
 *
 * <p>A removed device ({@code RDMA_CM_EVENT_DEVICE_REMOVAL}) gives its resources up before the loops end:
 * every connection, endpoint and group on the device {@link #hold() holds} them from the first use to the
 * end of its teardown; once the device is gone and the last holder {@link #release() released} them,
 * {@link Devices} closes the domain (with the slabs and every region still registered in it), the completion
 * loops' channels and the {@link DeviceWatch} that heard of the removal. Then the kernel can finish the
 * removal, which on a device that cannot disassociate a user context (Soft-RoCE) waits for all of that.
 *
 * <p>Threads: made, and its domain and shared CQ groups made and looked up, on the loops' CM loops (the
 * client's and the servers', so guarded by {@code this}); held and released on the CM loops;
 * {@link #events()} from any thread (immutable); closed by {@link Devices#close()} on the thread that stops
 * the loops, or by {@link Devices} once a removed device's last holder released it.
 */
public final class DeviceResources {
    private final Devices devices;
    private final Loops loops;
    private final RdmaContext device;
    /** One stream per device, shared by the connections watching it, open while any does. */
    private final Flux<AsyncEvent> events;
    /** Made on first use; guarded by this. */
    private Registrations domain;
    /** Each completion loop's shared CQs on this device; guarded by this. */
    private final Map<CompletionLoop, SharedCq.Group> sharedCqs = new HashMap<>();
    /** Set, under this, once closed: nothing may be made after. */
    private boolean closed;
    /** The device's {@code max_cqe}, queried on first use; guarded by this. */
    private int maxCqe;
    /** Connections, endpoints and groups between {@link #hold()} and {@link #release()}, and the removal; guarded by this. */
    private final DeviceHolders holders = new DeviceHolders();
    /** What tells these resources of the device's removal, or null; set once on the CM loop that made them. */
    private DeviceWatch watch;

    /**
     * CM loop: nothing native is made yet.
     *
     * @param device the device's shared context ({@link rdmaflux.verbs.CmId#sharedContext()}), which owns
     *               what is made here: no connection's end closes it
     */
    DeviceResources(Devices devices, Loops loops, RdmaContext device) {
        assert loops.inCmLoop() : "a CM loop of the loops only";
        this.devices = devices;
        this.loops = loops;
        this.device = device;
        this.events = RdmaDeviceEvents.events(device.deviceName()).publish().refCount();
    }

    /** {@return the device's shared context} */
    RdmaContext device() {
        return device;
    }

    /** CM loop that made these: the watch for the device's removal, closed with them. */
    synchronized void watch(DeviceWatch w) {
        this.watch = w;
    }

    /**
     * CM loop: a connection, endpoint or group starts using these resources (its queue pair, CQ and regions
     * are made in them); it {@link #release() releases} them once its teardown freed all of that.
     *
     * @return these resources
     * @throws rdmaflux.cm.RdmaCmException.DeviceRemoved when the device was removed
     */
    public synchronized DeviceResources hold() {
        checkOpen();
        holders.hold();
        return this;
    }

    /**
     * CM loop: a holder's teardown freed what it made here (its id, with the queue pair, was destroyed and
     * its regions closed). The last one of a removed device closes these resources.
     */
    public void release() {
        boolean last;
        synchronized (this) {
            last = holders.release() && !closed;
        }
        if (last) {
            devices.removedAndReleased(this);
        }
    }

    /** CM loop: the device is gone; {@return whether nothing holds these resources any more (once)} */
    synchronized boolean markRemoved() {
        return holders.remove() && !closed;
    }

    /** {@return where the connections on this device run work that may take milliseconds: the loops' workers} */
    public reactor.core.scheduler.Scheduler worker() {
        return loops.worker();
    }

    /**
     * CM loop: the loops' protection domain on this device, and its registration cache; made on first use
     * (again if something closed it). Nothing closes it before the loops are disposed and every connection
     * on them released its resources.
     *
     * @return the domain
     * @throws IllegalStateException when the loops are disposed and their resources closed
     */
    public synchronized Registrations domain() {
        assert loops.inCmLoop() : "a CM loop of the loops only";
        checkOpen();
        if (domain == null || domain.pd().isClosed()) {
            domain = new Registrations(device.allocateProtectionDomain());
        }
        return domain;
    }

    /**
     * CM loop: the CQs {@code loop}'s connections share on this device, made on first use. A shared CQ is
     * closed with its last connection; the group only says which one has room.
     *
     * @param loop the completion loop that polls them
     * @return its group
     * @throws IllegalStateException when the loops are disposed and their resources closed
     */
    synchronized SharedCq.Group sharedCqs(CompletionLoop loop) {
        assert loops.inCmLoop() : "a CM loop of the loops only";
        checkOpen();
        return sharedCqs.computeIfAbsent(loop, l -> new SharedCq.Group(l, device));
    }

    /**
     * CM loop: refuses a connection whose completions could not fit in one CQ of the device, before anything is
     * made for it, naming the options to lower.
     *
     * @param sendQueueDepth its send queue depth
     * @param receives the receives that can complete for it
     * @param receivesOption the option that sets {@code receives}
     * @throws RdmaResourceException (EINVAL, as {@code ibv_create_cq} would fail) when the sum is more than the
     *         device's {@code max_cqe}
     */
    public void checkCompletions(int sendQueueDepth, int receives, String receivesOption) {
        int max;
        synchronized (this) {
            if (maxCqe == 0) {
                maxCqe = device.queryDevice().maxCqe();
            }
            max = maxCqe;
        }
        long entries = (long) sendQueueDepth + receives;
        if (entries > max) {
            throw new RdmaResourceException("ibv_create_cq", Errno.EINVAL, "a connection with sendQueueDepth "
                    + sendQueueDepth + " and " + receives + " receives needs " + entries + " completion queue entries, "
                    + "more than " + device.deviceName() + " allows in one completion queue (max_cqe " + max
                    + "): lower ConnectionOptions.sendQueueDepth or " + receivesOption + " so that they add up to at most "
                    + max);
        }
    }

    /**
     * {@return the device's asynchronous events, shared: the first subscriber starts its thread, the last
     * one's cancel ends it; any thread}
     */
    public Flux<AsyncEvent> events() {
        return events;
    }

    /** {@return whether the domain was made} */
    synchronized boolean hasDomain() {
        return domain != null;
    }

    private void checkOpen() {
        if (holders.removed()) {
            throw rdmaflux.cm.RdmaCmException.of(rdmaflux.cm.Step.ADDRESS,
                    rdmaflux.verbs.CmEventType.DEVICE_REMOVAL, 0, null);
        }
        if (closed) {
            throw new IllegalStateException("these RdmaLoops are disposed");
        }
    }

    /**
     * CM loop: the domain of a removed device closes (whatever is still registered in it first, the
     * application's regions too, whose later use fails as on a closed connection); the completion loops'
     * channels and the watch follow ({@link Devices}).
     */
    synchronized void closeDomain() {
        closed = true;
        sharedCqs.clear();
        if (domain != null) {
            domain.close();
        }
    }

    /**
     * Closes the domain, which closes whatever is still registered in it first; the shared CQ groups are
     * dropped (each CQ was closed with its last connection, and the completion loops close their channels
     * as they end). Called once every connection on the loops destroyed its queue pair.
     */
    synchronized void close() {
        closed = true;
        sharedCqs.clear();
        try {
            if (domain != null) {
                domain.close(); // again after closeDomain(): idempotent
            }
        } finally {
            if (watch != null) {
                watch.close();
            }
        }
    }

    @Override
    public String toString() {
        return "DeviceResources[" + device.deviceName() + "]";
    }
}
