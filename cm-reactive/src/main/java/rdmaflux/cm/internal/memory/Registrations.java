package rdmaflux.cm.internal.memory;

import rdmaflux.cm.RdmaLoops;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;

/**
 * The protection domain an {@link RdmaLoops} instance keeps for one device (in its per-device resources,
 * {@code DeviceResources}, which make and close it), and the registration cache of that domain: the same
 * memory (address and length) registered with the same access is one memory region, shared by every
 * {@link Registration.Lease} on it and deregistered when the last lease is closed (and the last operation
 * using it ended).
 *
 * <p>Only live registrations are cached: nothing stays pinned once its last holder let go. Caching
 * beyond that would need to know when the application frees or remaps the memory (a region keeps the
 * pages it pinned, so a region cached past the memory's free would send stale bytes); rdma-core's
 * on-demand paging is what solves that, not a cache.
 *
 * <p>Access must match exactly: a region with more rights (a remote write key) is not handed to a caller
 * who asked for fewer, since its keys would give the peer what the caller did not grant.
 *
 * <p>Threads: any; the map and each registration's holder count are guarded by {@code this}. The
 * registration call itself ({@code ibv_reg_mr}, which pins pages and can take milliseconds) runs outside
 * the lock.
 */
public final class Registrations {
    /** What a cached region is found by. */
    record Key(long address, long length, int access) {
    }

    private final ProtectionDomain pd;
    private final BufferSlabs slabs;
    /** Guarded by this: every registration with at least one holder. */
    private final Map<Key, Registration> live = new HashMap<>();
    /**
     * Each port's largest message ({@code max_msg_sz}), queried once: a port query is a system call that
     * every connection's setup made on the CM loop, for a value fixed by the device.
     */
    private final java.util.concurrent.ConcurrentHashMap<Integer, Long> maxMessageSizes =
            new java.util.concurrent.ConcurrentHashMap<>();

    public Registrations(ProtectionDomain pd) {
        this.pd = pd;
        this.slabs = new BufferSlabs(pd);
    }

    /** {@return the slabs connections carve their own buffers from, in this domain} */
    public BufferSlabs slabs() {
        return slabs;
    }

    /** {@return the protection domain} */
    public ProtectionDomain pd() {
        return pd;
    }

    /**
     * {@return the largest message of a port of this domain's device, from its first query}
     *
     * @param context a context of this domain's device (a connection's own)
     * @param port the port number
     */
    public long maxMessageSize(rdmaflux.verbs.RdmaContext context, int port) {
        Long known = maxMessageSizes.get(port);
        if (known != null) {
            return known;
        }
        long size = context.queryPort(port).maxMessageSize();
        maxMessageSizes.putIfAbsent(port, size);
        return size;
    }

    /**
     * A lease on the registration of {@code memory}: the cached one, or a new one.
     *
     * @param memory native memory that stays allocated until the lease is closed
     * @param access what the local device and the peer may do with it
     * @param owner the set the lease adds itself to (and leaves when closed), or {@code null}
     * @return the lease, open
     * @throws IllegalArgumentException for a heap or empty segment
     * @throws rdmaflux.verbs.RdmaResourceException when the memlock limit is exceeded
     */
    public Registration.Lease lease(MemorySegment memory, AccessFlags access, Set<Registration.Lease> owner) {
        if (memory == null || access == null) {
            throw new NullPointerException("memory and access are required");
        }
        if (!memory.isNative()) {
            // Before the lookup: a heap segment's address is an offset, which could match a cached region.
            throw new IllegalArgumentException("only native memory can be registered (allocate it from an Arena); "
                    + "heap segments move with the garbage collector");
        }
        if (memory.scope() != null && !memory.scope().isAlive()) {
            throw new IllegalStateException("the segment's arena is already closed");
        }
        Key key = new Key(memory.address(), memory.byteSize(), access.mask());
        synchronized (this) {
            Registration r = live.get(key);
            if (r != null) {
                r.holders++;
                return r.new Lease(memory, owner);
            }
        }
        MemoryRegion mr = pd.register(memory, access);
        Registration raced;
        synchronized (this) {
            raced = live.get(key);
            if (raced == null) {
                Registration r = new Registration(mr, this, key);
                r.holders = 1;
                live.put(key, r);
                return r.new Lease(memory, owner);
            }
            raced.holders++;
        }
        // Another thread registered the same memory meanwhile: use its region, drop ours.
        mr.close();
        return raced.new Lease(memory, owner);
    }

    /** A lease was closed: the last one takes the registration out of the cache and closes it. */
    void unhold(Registration r) {
        synchronized (this) {
            if (--r.holders > 0) {
                return;
            }
            live.remove(r.key, r);
        }
        r.close();
    }

    /** {@return the registrations with holders right now (tests)} */
    synchronized int size() {
        return live.size();
    }

    /**
     * Closes the protection domain, which closes whatever is still registered in it first (children before
     * their parent: every connection's queue pair is gone by now).
     */
    public void close() {
        synchronized (this) {
            live.clear();
        }
        pd.close();
    }

    @Override
    public String toString() {
        return "Registrations[" + pd + "]";
    }
}
