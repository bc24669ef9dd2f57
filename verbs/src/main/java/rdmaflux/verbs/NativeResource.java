package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Base of every owner of a native rdma-core object.
 *
 * <p>Three guarantees, all of which exist to turn what would be a JVM crash into an exception:
 * <ul>
 *   <li>{@link #close()} is idempotent and closes the children first, in the teardown order verbs
 *       requires ({@link Rank}): a CQ cannot be destroyed while a QP uses it, a PD not while an MR does.</li>
 *   <li>Use after close throws {@link IllegalStateException} naming the object.</li>
 *   <li>Operations hold a lease ({@link #acquire()}/{@link #release()}) so a close on another thread
 *       waits for in-flight non-blocking calls instead of freeing memory under them. Blocking waits
 *       (poll on a channel fd) never hold a lease.</li>
 *   <li>Posted work requests hold a work lease ({@link #acquireWork()}/{@link #releaseWork()}) on what
 *       they reference until their completion is polled or their queue is destroyed. A close never waits
 *       for those: the object counts as closed at once (new uses fail) and is destroyed when the last work
 *       lease is given back ({@link #isDestroyed()}).</li>
 * </ul>
 */
public abstract sealed class NativeResource implements AutoCloseable
        permits RdmaContext, XrcDomain, ProtectionDomain, MemoryRegion, MemoryWindow, CompletionChannel, CompletionQueue,
        QueuePair, SharedReceiveQueue, AddressHandle, EventChannel, CmId {

    /** Teardown order: lower ranks are destroyed first. */
    enum Rank {
        // A type-2 window bound through a QP references it (rxe waits for the QP's last reference on
        // destroy), and a bound window keeps its MR from being deregistered (EINVAL): windows go first.
        MW, QP, SRQ, AH, MR, CQ, CHANNEL, PD, CM_ID, CONTEXT, EVENT_CHANNEL
    }

    private static final int CLOSED = Integer.MIN_VALUE;
    private static final System.Logger LOG = System.getLogger("rdmaflux.verbs");

    /**
     * {@link #work}: set once the close found no short lease left; from then on the object is destroyed when
     * the work lease count reaches zero.
     */
    private static final int DRAINED = 1 << 30;
    /** {@link #work}: the destroy runs or ran (it starts once). */
    private static final int DESTROYING = 1 << 29;
    /** {@link #work}: the bits that count work leases. */
    private static final int LEASES = DESTROYING - 1;

    private final AtomicInteger state = new AtomicInteger();
    /**
     * Work requests posted and not yet completed (nor made moot by their queue's destroy) that use this
     * object, in the low bits, with {@link #DRAINED} and {@link #DESTROYING} above them. One word, so that the
     * release which takes the count to zero sees in the same atomic step whether the close has drained; in
     * two words, a release paused between its decrement and its read of the other could find the close
     * drained and destroy under a lease taken meanwhile.
     */
    private final AtomicInteger work = new AtomicInteger();
    /** Set once the native destroy returned (or failed), for {@link #isDestroyed()}. */
    private volatile boolean destroyed;
    private final Rank rank;
    private final NativeResource[] owners;
    /** Owners gained after construction ({@link #addOwner}), or null while there are none. */
    private List<NativeResource> laterOwners;
    /**
     * In the order they were made, which {@link #finish} keeps within a rank. A set, since a child leaves it
     * as it closes: a list's removal is linear, and half a million regions of one domain did not finish
     * closing within three minutes.
     */
    private final Set<NativeResource> children = new LinkedHashSet<>();
    /** The native object, sized to its struct so field access is bounds-checked. */
    final MemorySegment handle;

    NativeResource(Rank rank, MemorySegment handle, NativeResource... owners) {
        this.rank = rank;
        this.handle = handle;
        this.owners = owners;
        for (NativeResource o : owners) {
            o.adopt(this);
        }
    }

    /** Destroys the native object; called once, after all children are closed and no lease is held. */
    abstract void destroy();

    /** {@return a short description for messages, e.g. {@code QueuePair[qpn=17]}} */
    @Override
    public abstract String toString();

    /** {@return whether {@link #close()} has been called} */
    public final boolean isClosed() {
        return state.get() < 0;
    }

    /**
     * Takes a lease on the native object for the duration of a call.
     *
     * @return the native handle
     * @throws IllegalStateException when closed
     */
    final MemorySegment acquire() {
        // One atomic add, no compare-and-set loop. Once closed the state stays negative whatever is added,
        // so a late caller sees that, takes its increment back and fails; close() waits for it as for a
        // lease, which is as short.
        if (state.getAndIncrement() < 0) {
            state.decrementAndGet();
            throw closedException();
        }
        return handle;
    }

    /** Ends a lease taken with {@link #acquire()}. */
    final void release() {
        state.decrementAndGet();
    }

    /** {@return whether something made through this object is still open (not yet destroyed)} */
    final boolean hasChildren() {
        synchronized (children) {
            return !children.isEmpty();
        }
    }

    /** {@return the leases held right now; for tests that check none is leaked} */
    final int leaseCount() {
        return state.get() & ~CLOSED;
    }

    /**
     * Takes a work lease: a posted work request references this object until its completion is polled.
     * Unlike {@link #acquire()} it does not make a {@link #close()} wait; it defers the destroy.
     *
     * @throws IllegalStateException when closed
     */
    final void acquireWork() {
        // Count first, then look at the state; close() sets the state first, then looks at the count.
        // Both are sequentially consistent, so at least one side sees the other: either this call fails,
        // or the close sees the lease and defers the destroy.
        work.getAndIncrement();
        if (state.get() < 0) {
            releaseWork();
            throw closedException();
        }
    }

    /**
     * Ends a work lease; the last one of a closed object destroys it, on this thread. A failing destroy
     * is logged, not thrown: the caller (a poll, a queue's close) did nothing wrong.
     */
    final void releaseWork() {
        if (work.decrementAndGet() == DRAINED) {
            finishDeferred();
        }
    }

    /** {@return the work leases held right now: posted requests that use this object} */
    final int workLeaseCount() {
        return work.get() & LEASES;
    }

    /**
     * Tells whether the native object is gone: {@link #close()} was called and no outstanding work
     * request uses it any more. A {@link MemoryRegion} is deregistered from then on, so memory the
     * caller owns may be freed.
     *
     * @return whether the native destroy ran
     */
    public final boolean isDestroyed() {
        return destroyed;
    }

    /** Fails with the standard message if closed; for calls that need no lease. */
    final void checkOpen() {
        if (isClosed()) {
            throw closedException();
        }
    }

    final IllegalStateException closedException() {
        return new IllegalStateException(this + " is closed");
    }

    /**
     * Makes {@code owner} close this object first when it closes, as the constructor's owners do; for a use
     * that starts after creation (a type-2 memory window bound through a QP).
     *
     * @throws IllegalStateException when {@code owner} is closed
     */
    final void addOwner(NativeResource owner) {
        synchronized (children) {
            if (laterOwners == null) {
                laterOwners = new ArrayList<>(1);
            } else if (laterOwners.contains(owner)) {
                return;
            }
            owner.adopt(this);
            laterOwners.add(owner);
        }
    }

    /**
     * Called by {@link #close()} before anything is closed, on the first call only; throwing leaves the
     * object open. For objects whose destroy the kernel would refuse (a memory region under a bound window).
     */
    void checkClosable() {
    }

    /**
     * Called by {@link #close()} once no short lease is held, before the children are closed: a queue
     * pair gives back the work leases its requests hold on memory windows, which must go before it.
     */
    void beforeChildren() {
    }

    private void adopt(NativeResource child) {
        synchronized (children) {
            if (isClosed()) {
                throw closedException();
            }
            children.add(child);
        }
    }

    private void disown(NativeResource child) {
        synchronized (children) {
            children.remove(child);
        }
    }

    /**
     * Closes the children (in teardown order), then this object. Safe to call more than once and from
     * any thread; later calls return at once. While posted work requests still use the object (a region
     * in a scatter/gather entry, an address handle, a window being bound), it counts as closed at once
     * but is destroyed only when the last of them completes or its queue is destroyed: see
     * {@link #isDestroyed()}.
     *
     * @throws RdmaException when the native destroy fails (the object counts as closed all the same,
     *                       so a retry cannot double-free)
     * @throws IllegalStateException when the object cannot be closed yet and stays open (a
     *                               {@link MemoryRegion} that a bound {@link MemoryWindow} holds)
     */
    @Override
    public final void close() {
        if (isClosed()) {
            return;
        }
        checkClosable();
        int s;
        do {
            s = state.get();
            if (s < 0) {
                return;
            }
        } while (!state.compareAndSet(s, s | CLOSED));
        awaitLeases();
        beforeChildren();
        // No work lease can be added from here on (acquireWork sees the state), so a zero stays zero; an
        // acquireWork that fails adds one for an instant and its release may then start the destroy instead.
        if (work.addAndGet(DRAINED) == DRAINED && work.compareAndSet(DRAINED, DRAINED | DESTROYING)) {
            RuntimeException failure = finish();
            if (failure != null) {
                throw failure;
            }
        }
    }

    /**
     * Waits for the leases taken before the close to end. Leases are short non-blocking calls, so the wait is
     * bounded by one of them; a method of its own so that a tool that flags {@link Thread#onSpinWait()} (as
     * BlockHound does) can allow this wait and no other.
     */
    private void awaitLeases() {
        while ((state.get() & ~CLOSED) != 0) {
            Thread.onSpinWait();
        }
    }

    /** The destroy of an object whose close was deferred, run by whoever gave back its last work lease. */
    private void finishDeferred() {
        if (!work.compareAndSet(DRAINED, DRAINED | DESTROYING)) {
            return;
        }
        RuntimeException failure = finish();
        if (failure != null) {
            LOG.log(System.Logger.Level.WARNING, "deferred destroy of " + this + " failed", failure);
        }
    }

    /** Closes the children, destroys this object and leaves its owners; {@return the first failure, or null} */
    private RuntimeException finish() {
        RuntimeException failure = null;
        List<NativeResource> toClose;
        synchronized (children) {
            toClose = new ArrayList<>(children);
        }
        toClose.sort(Comparator.comparing(c -> c.rank));
        for (NativeResource c : toClose) {
            try {
                c.close();
            } catch (RuntimeException e) {
                failure = addFailure(failure, e);
            }
        }
        try {
            destroy();
        } catch (RuntimeException e) {
            failure = addFailure(failure, e);
        } finally {
            destroyed = true;
            for (NativeResource o : owners) {
                o.disown(this);
            }
            List<NativeResource> later;
            synchronized (children) {
                later = laterOwners;
                laterOwners = null;
            }
            if (later != null) {
                for (NativeResource o : later) {
                    o.disown(this);
                }
            }
        }
        return failure;
    }

    private static RuntimeException addFailure(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }
}
