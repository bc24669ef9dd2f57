package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.util.CmLog;
import rdmaflux.cm.RdmaGrant;
import rdmaflux.cm.internal.memory.Registration;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.MemoryWindow;
import rdmaflux.verbs.MemoryWindowType;
import rdmaflux.verbs.RemoteBuffer;

/**
 * An {@link RdmaGrant}: one type-2 memory window of the connection's protection domain, bound through its
 * queue pair by a {@link OpKind#BIND} operation and revoked by a {@link OpKind#INVALIDATE} one.
 * From its making until it is revoked, failed or the connection's queue pair is gone, it holds a lease on its
 * {@link Registration}, and the window holds the region (the kernel refuses to deregister it under a bound
 * window). Each grant has its own window, closed when the grant ends; the ones still open die with the queue
 * pair.
 *
 * <p>Threads: any; {@link #end()} runs once.
 */
public final class WindowGrant implements RdmaGrant {
    /** A remote-only mask: what a window can grant. */
    private static final int REMOTE = AccessFlag.REMOTE_READ.value() | AccessFlag.REMOTE_WRITE.value()
            | AccessFlag.REMOTE_ATOMIC.value();

    final Registration registration;
    public final MemoryWindow window;
    final long offset;
    final long length;
    final AccessFlags access;
    private final Live live;
    private final SendQueue queue;
    private final Mono<Void> connectionEnd;
    private final AtomicBoolean ended = new AtomicBoolean();
    private final AtomicBoolean revoking = new AtomicBoolean();
    private final Mono<Void> revocation;
    private volatile RemoteBuffer remote;

    /** The grants of one connection that are not ended, so that the connection's end returns their leases. */
    static final class Live {
        private final Set<WindowGrant> grants = ConcurrentHashMap.newKeySet();

        /** CM loop, after the queue pair was destroyed (with it every window bound through it). */
        void endAll() {
            for (WindowGrant g : grants) {
                g.end();
            }
        }
    }

    private WindowGrant(Live live, SendQueue queue, Registration registration, MemoryWindow window, long offset,
                        long length, AccessFlags access, Mono<Void> connectionEnd, Scheduler scheduler) {
        this.live = live;
        this.queue = queue;
        this.registration = registration;
        this.window = window;
        this.offset = offset;
        this.length = length;
        this.access = access;
        this.connectionEnd = connectionEnd;
        this.revocation = Mono.defer(this::invalidate).cache().publishOn(scheduler);
    }

    /**
     * Checks, then allocates a window and posts its bind; the Mono ends with the grant once the bind completed.
     *
     * @param live the connection's live grants
     * @param pd the connection's protection domain, where the window is made
     * @param queue the connection's send queue, which binds and invalidates it
     * @param view a view of a registration of {@code pd}
     * @param access remote read, write and atomic bits only
     * @param connectionEnd completes when the connection's resources are freed
     * @param scheduler where {@link #revoke()} signals
     * @return the grant; {@link IllegalArgumentException} for a registration without {@link AccessFlag#MW_BIND}
     *         (or without {@link AccessFlag#LOCAL_WRITE} when granting remote write or atomics) or an access
     *         that is not remote-only; {@link IllegalStateException} when the registration is closed
     */
    public static Mono<RdmaGrant> grant(Live live, rdmaflux.verbs.ProtectionDomain pd, SendQueue queue,
                                        Registration.View view, AccessFlags access, Mono<Void> connectionEnd,
                                        Scheduler scheduler) {
        Registration reg = view.owner();
        AccessFlags has = reg.region().access();
        int remoteBits = access.mask() & REMOTE;
        if (remoteBits == 0 || (access.mask() & ~(REMOTE | AccessFlag.LOCAL_WRITE.value())) != 0) {
            return Mono.error(new IllegalArgumentException("a grant gives REMOTE_READ, REMOTE_WRITE or REMOTE_ATOMIC, "
                    + "not " + access));
        }
        if (!has.contains(AccessFlag.MW_BIND)) {
            return Mono.error(new IllegalArgumentException("the buffer was registered without AccessFlag.MW_BIND, "
                    + "which grants need: register(memory, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.MW_BIND))"));
        }
        if ((remoteBits & ~AccessFlag.REMOTE_READ.value()) != 0 && !has.contains(AccessFlag.LOCAL_WRITE)) {
            return Mono.error(new IllegalArgumentException("granting remote write or atomics needs a registration "
                    + "with AccessFlag.LOCAL_WRITE; it has " + has));
        }
        return Mono.defer(() -> {
            reg.acquire(); // IllegalStateException when closed: the Mono fails with it
            MemoryWindow w;
            try {
                w = pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
            } catch (RuntimeException e) {
                reg.release();
                return Mono.error(e);
            }
            WindowGrant g = new WindowGrant(live, queue, reg, w, view.offset(), view.length(),
                    AccessFlags.fromMask(remoteBits), connectionEnd, scheduler);
            live.grants.add(g);
            return submit(queue, OpKind.BIND, g)
                    .map(bound -> {
                        g.remote = (RemoteBuffer) bound;
                        return (RdmaGrant) g;
                    })
                    .doOnError(e -> g.end());
        });
    }

    @Override
    public RemoteBuffer remote() {
        return remote;
    }

    @Override
    public Mono<Void> revoke() {
        return revocation;
    }

    private Mono<Void> invalidate() {
        if (ended.get() || !revoking.compareAndSet(false, true)) {
            return Mono.empty();
        }
        if (queue.closedForSends()) {
            return connectionEnd;
        }
        return submit(queue, OpKind.INVALIDATE, this)
                .then(Mono.<Void>fromRunnable(this::end))
                .onErrorResume(e -> queue.closedForSends() ? connectionEnd : Mono.error(e));
    }

    /**
     * Queues or posts a {@link OpKind#BIND} or {@link OpKind#INVALIDATE} of {@code grant}.
     *
     * @return ends when its work completes: a bind with the window's {@link RemoteBuffer}
     */
    private static Mono<Object> submit(SendQueue queue, OpKind kind, WindowGrant grant) {
        return Mono.create(sink -> queue.enqueue(kind, null, null, null, 0, 0, grant, sink));
    }

    /** The key the bind gave the window, for the invalidate. */
    int rkey() {
        return remote.rkey();
    }

    /**
     * Ends the grant once: closes the window (whose key was invalidated, or died with its queue pair, or
     * was never bound), which releases the region, then returns the registration's lease.
     */
    void end() {
        if (!ended.compareAndSet(false, true)) {
            return;
        }
        live.grants.remove(this);
        try {
            window.close();
        } catch (RuntimeException e) {
            CmLog.LOG.log(System.Logger.Level.WARNING, "closing " + window + " failed", e);
        } finally {
            registration.release();
        }
    }

    @Override
    public String toString() {
        RemoteBuffer r = remote;
        return "RdmaGrant[" + access + (r == null ? ", binding" : ", " + r) + (ended.get() ? ", ended" : "") + "]";
    }
}
