package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

import rdmaflux.verbs.ffi.ibv_mr;

/**
 * Registered memory ({@code struct ibv_mr}).
 *
 * <p>Lifetime: {@link #close()} takes effect at once for new uses (posting, {@code sge}, remote buffers
 * fail with {@link IllegalStateException}), but while posted work requests still use the region it stays
 * registered, and the device may still read or write its memory, until their completions are polled or
 * their QP is destroyed; then it is deregistered ({@link #isDestroyed()}), on the thread that polled or
 * closed the QP. Memory given to {@link ProtectionDomain#register} must stay allocated until then: the
 * verbs layer checks at every post that it still is, but cannot keep a caller's arena open. A region from
 * {@link ProtectionDomain#allocateRegion} owns its memory and frees it right after the deregistration.
 */
public final class MemoryRegion extends NativeResource {
    private final MemorySegment segment;
    private final AccessFlags access;
    private final int lkey;
    private final int rkey;
    private final ProtectionDomain pd;
    /** The arena of memory this region owns ({@link ProtectionDomain#allocateRegion}), or null. */
    private final Arena owned;
    /** Memory windows whose last bind used this region: the kernel refuses to deregister it under them. */
    private final AtomicInteger windows = new AtomicInteger();

    MemoryRegion(ProtectionDomain pd, MemorySegment mr, MemorySegment segment, AccessFlags access) {
        this(pd, mr, segment, access, null);
    }

    MemoryRegion(ProtectionDomain pd, MemorySegment mr, MemorySegment segment, AccessFlags access, Arena owned) {
        super(Rank.MR, mr.reinterpret(ibv_mr.sizeof()), pd, pd.context());
        this.pd = pd;
        this.owned = owned;
        this.segment = segment;
        this.access = access;
        this.lkey = ibv_mr.lkey(handle);
        this.rkey = ibv_mr.rkey(handle);
    }

    /**
     * {@return the registered memory; for a region from {@link ProtectionDomain#allocateRegion}, a segment
     * that is freed (and fails on access) once the region is destroyed}
     */
    public MemorySegment segment() {
        return segment;
    }

    /** {@return the start address of the registered memory} */
    public long address() {
        return segment.address();
    }

    /** {@return the registered length in bytes} */
    public long length() {
        return segment.byteSize();
    }

    /** {@return the local key, for scatter/gather entries} */
    public int lkey() {
        return lkey;
    }

    /** {@return the remote key, for peers' one-sided operations (meaningless without remote access flags)} */
    public int rkey() {
        return rkey;
    }

    /** {@return the access the region was registered with} */
    public AccessFlags access() {
        return access;
    }

    /** {@return the protection domain} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * Describes the whole region for a peer.
     *
     * @return address, length and rkey
     * @throws IllegalStateException when the region grants no remote access
     */
    public RemoteBuffer toRemoteBuffer() {
        checkOpen();
        if (!access.contains(AccessFlag.REMOTE_READ) && !access.contains(AccessFlag.REMOTE_WRITE)
                && !access.contains(AccessFlag.REMOTE_ATOMIC)) {
            throw new IllegalStateException(this + " was registered without remote access; register it with "
                    + "AccessFlag.REMOTE_READ/REMOTE_WRITE/REMOTE_ATOMIC");
        }
        return new RemoteBuffer(address(), length(), rkey);
    }

    /**
     * Checks that {@code [offset, offset + length)} lies inside the region. The check cannot overflow:
     * a negative offset or length, or a sum beyond {@code Long.MAX_VALUE}, is out of range.
     *
     * @param offset bytes from the start
     * @param length bytes
     * @throws IndexOutOfBoundsException when the range is not inside the region
     */
    public void checkRange(long offset, long length) {
        // offset > size - length, not offset + length > size: the sum overflows for offsets near MAX_VALUE.
        long size = segment.byteSize();
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new IndexOutOfBoundsException("range of " + length + " bytes at offset " + offset
                    + " is outside " + this);
        }
    }

    /**
     * Fails unless the region is open and its memory is still allocated; for posting, which must never
     * hand the provider freed memory.
     */
    void checkUsable() {
        checkOpen();
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the memory of " + this + " was freed (its arena is closed); "
                    + "close the region before its arena");
        }
    }

    /** {@return how many memory windows hold this region (see {@link MemoryWindow}): while any does, it cannot close} */
    public int boundWindowCount() {
        return windows.get();
    }

    void holdWindow() {
        windows.incrementAndGet();
    }

    void releaseWindow() {
        windows.decrementAndGet();
    }

    @Override
    void checkClosable() {
        int n = windows.get();
        if (n > 0) {
            throw new IllegalStateException(this + " is held by " + n + " memory window(s) bound to it (the kernel "
                    + "refuses to deregister it, EINVAL): close them, or close the protection domain, first");
        }
    }

    /** {@return whether the region owns its memory, freed after the deregistration ({@link ProtectionDomain#allocateRegion})} */
    public boolean ownsMemory() {
        return owned != null;
    }

    @Override
    void destroy() {
        Calls.IBV_DEREG_MR.callStatus(handle);
        // Only after a deregistration that succeeded: a region still registered keeps its memory.
        if (owned != null) {
            owned.close();
        }
    }

    @Override
    public String toString() {
        return "MemoryRegion[" + segment.byteSize() + " bytes, lkey=0x" + Integer.toHexString(lkey) + "]";
    }
}
