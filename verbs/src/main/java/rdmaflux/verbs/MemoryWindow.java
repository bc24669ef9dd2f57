package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_context;
import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.ibv_mw;
import rdmaflux.verbs.ffi.ibv_mw_bind;
import rdmaflux.verbs.ffi.ibv_mw_bind_info;
import rdmaflux.verbs.ffi.ibv_pd;

/**
 * A memory window ({@code struct ibv_mw}), made by {@link ProtectionDomain#allocateMemoryWindow}: a remote key
 * for a sub-range of a {@link MemoryRegion} that can be granted and revoked without deregistering the region.
 *
 * <p>A {@link MemoryWindowType#TYPE_1} window is bound with {@link #bind} ({@code ibv_bind_mw}); binding it
 * again gives a new key and kills the old one. A {@link MemoryWindowType#TYPE_2} window is bound by posting
 * a work request, {@link SendRequests#bindWindow} or {@link ExtendedSendQueue#bindWindow}, and is then usable
 * only through the QP that bound it; {@code LOCAL_INV} on that QP ({@link SendRequests#invalidate} or
 * {@link ExtendedSendQueue#localInvalidate}) or the peer's {@code SEND_WITH_INV} revokes its key, after which it
 * can be bound again. Each bind returns the {@link RemoteBuffer} to hand the peer; use it once the bind's
 * completion arrived (the bind runs in send-queue order). Soft-RoCE on Linux 6.1 checks an access through a
 * window against the window's region, not its range (docs/verbs.md, "Memory windows").
 *
 * <p>Lifetimes: from the post of a bind until the window is closed or bound to another region, the window
 * holds its region, whose {@link MemoryRegion#close()} then fails with {@link IllegalStateException} (the
 * kernel refuses to deregister a region under a bound window). A type-2 window bound through a QP is closed
 * with that QP, as with its PD and context. A bind request, like any posted request, holds the window and
 * the region until its completion is polled: closing the window meanwhile defers its deallocation until
 * then (or until its QP closes, which lets go of its windows first).
 */
public final class MemoryWindow extends NativeResource {
    private final ProtectionDomain pd;
    private final MemoryWindowType type;
    /** The region the last posted bind used, held against deregistration; guarded by {@code this}. */
    private MemoryRegion region;
    /** Set by {@link #destroy()}; guarded by {@code this}. */
    private boolean deallocated;

    MemoryWindow(ProtectionDomain pd, MemorySegment mw, MemoryWindowType type) {
        super(Rank.MW, mw.reinterpret(ibv_mw.sizeof()), pd, pd.context());
        this.pd = pd;
        this.type = type;
    }

    /** {@code ibv_alloc_mw}: static inline in verbs.h, a call of {@code ibv_context_ops.alloc_mw}. */
    static MemoryWindow allocate(ProtectionDomain pd, MemorySegment pdHandle, MemoryWindowType type) {
        MemorySegment fn = ibv_context_ops.alloc_mw(ops(ibv_pd.context(pdHandle)));
        if (fn.equals(MemorySegment.NULL)) {
            throw new RdmaUnsupportedException("ibv_alloc_mw", "the provider of " + pd.context().deviceName()
                    + " has no memory windows");
        }
        MemorySegment mw = (MemorySegment) ProviderCalls.ALLOC_MW.at(fn).invoke(pdHandle, type.value());
        if (mw.equals(MemorySegment.NULL)) {
            int errno = Native.lastErrno();
            String detail = type + " on " + pd.context().deviceName();
            if (errno == Errno.EOPNOTSUPP) {
                throw new RdmaUnsupportedException("ibv_alloc_mw", detail);
            }
            throw RdmaException.of("ibv_alloc_mw", errno == 0 ? Errno.ENOMEM : errno, detail);
        }
        return new MemoryWindow(pd, mw, type);
    }

    private static MemorySegment ops(MemorySegment ctx) {
        return ibv_context.ops(ctx.reinterpret(ibv_context.sizeof()));
    }

    /** {@return the window's type} */
    public MemoryWindowType type() {
        return type;
    }

    /** {@return the protection domain} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * {@return the window's current remote key: the one of its last bind (posted, for type 2), or the key it
     * was allocated with}
     */
    public int rkey() {
        MemorySegment mw = acquire();
        try {
            return ibv_mw.rkey(mw);
        } finally {
            release();
        }
    }

    /** {@return the region the window's last bind used (held until the window closes or binds elsewhere), or null} */
    public synchronized MemoryRegion boundRegion() {
        return region;
    }

    /**
     * {@code ibv_inc_rkey}: the key a bind gives the window, the current one with its low 8 bits (the tag the
     * consumer owns) incremented.
     *
     * @param rkey a key
     * @return the next key
     */
    static int nextRkey(int rkey) {
        return (rkey & ~0xff) | ((rkey + 1) & 0xff);
    }

    /**
     * Binds a type-1 window to a range of a region ({@code ibv_bind_mw}): posts a bind request to {@code qp}'s
     * send queue; with {@link SendFlag#SIGNALED} its completion ({@link WcOpcode#BIND_MW}) has {@code wrId}.
     * The old key, if any, dies.
     *
     * @param qp an RC or UC QP of the window's PD, in RTS
     * @param region the region, registered with {@link AccessFlag#MW_BIND} in the window's PD
     * @param offset where in the region the window starts
     * @param length bytes
     * @param access what the peer may do: {@link AccessFlag#REMOTE_READ}, {@link AccessFlag#REMOTE_WRITE},
     *               {@link AccessFlag#REMOTE_ATOMIC} ({@link AccessFlag#LOCAL_WRITE}, which {@link AccessFlags#of}
     *               adds to remote write, is ignored)
     * @param wrId the id of the bind's completion
     * @param sendFlags {@link SendFlag#mask} bits
     * @return the range and the window's new key, for the peer
     * @throws IllegalStateException for a type-2 window, or anything closed
     * @throws IllegalArgumentException when the region, QP or access do not fit the window (see {@link #checkBind})
     * @throws RdmaException when the provider refuses the bind
     */
    public RemoteBuffer bind(QueuePair qp, MemoryRegion region, long offset, long length, AccessFlags access,
                             long wrId, int sendFlags) {
        if (type != MemoryWindowType.TYPE_1) {
            throw new IllegalStateException(this + " is bound by posting a work request: use "
                    + "SendRequests.bindWindow or ExtendedSendQueue.bindWindow");
        }
        checkBind(qp, region, offset, length, access);
        // ibv_bind_mw posts a request to the QP's send queue: recorded there like any post, with work leases
        // on this window and the region until its completion is polled.
        qp.sendLock.lock(qp);
        try (Leases leases = new Leases(); Arena arena = Arena.ofConfined()) {
            MemorySegment q = leases.take(qp);
            // A short lease too: the key is read back after the post, which a poll may already have retired.
            MemorySegment mw = leases.take(this);
            MemorySegment bind = ibv_mw_bind.allocate(arena);
            ibv_mw_bind.wr_id(bind, wrId);
            ibv_mw_bind.send_flags(bind, sendFlags);
            writeBindInfo(ibv_mw_bind.bind_info(bind), region.handle, region.address() + offset, length, access);
            // The work leases keep window and region from being destroyed, from here until the completion.
            acquireWork();
            try {
                region.acquireWork();
            } catch (RuntimeException e) {
                releaseWork();
                throw e;
            }
            WorkRing ring = qp.sendRing;
            long mark = ring.mark();
            ring.begin(wrId);
            ring.add(this);
            ring.add(region);
            ring.publish();
            int rc = -1;
            try {
                MemorySegment fn = ibv_context_ops.bind_mw(ops(ibv_mw.context(mw)));
                rc = (int) ProviderCalls.BIND_MW.at(fn).invoke(q, mw, bind);
            } finally {
                if (rc != 0) {
                    ring.rollback(mark);
                }
            }
            if (rc != 0) {
                int errno = rc > 0 ? rc : Native.lastErrno();
                throw RdmaException.of("ibv_bind_mw", errno, this + " to " + region);
            }
            // The provider posted the bind and set the window's new key.
            hold(region);
            return new RemoteBuffer(region.address() + offset, length, ibv_mw.rkey(mw));
        } finally {
            qp.sendLock.unlock();
        }
    }

    /** Writes a {@code struct ibv_mw_bind_info}. */
    static void writeBindInfo(MemorySegment info, MemorySegment mr, long address, long length, AccessFlags access) {
        ibv_mw_bind_info.mr(info, mr);
        ibv_mw_bind_info.addr(info, address);
        ibv_mw_bind_info.length(info, length);
        ibv_mw_bind_info.mw_access_flags(info, windowAccess(access));
    }

    /** {@return the remote bits of {@code access}: a window grants nothing local} */
    static int windowAccess(AccessFlags access) {
        return access.mask() & (AccessFlag.REMOTE_READ.value() | AccessFlag.REMOTE_WRITE.value()
                | AccessFlag.REMOTE_ATOMIC.value());
    }

    /**
     * The checks verbs.h's {@code ibv_bind_mw} and the IB spec make of a bind, done before anything is posted:
     * a wrong bind otherwise fails only in its completion ({@code MW_BIND_ERR}), and the QP with it.
     *
     * @param qp the QP the bind goes through, or null when not known yet (checked when posting)
     * @throws IllegalArgumentException when the region or the QP is of another PD (ibv_bind_mw: EPERM), the
     *     region lacks {@link AccessFlag#MW_BIND}, {@code access} asks for more than remote access (or remote
     *     write or atomics on a region without {@link AccessFlag#LOCAL_WRITE}), or the QP is neither RC nor UC
     * @throws IndexOutOfBoundsException when the range is not inside the region
     * @throws IllegalStateException when the region or window is closed
     */
    void checkBind(QueuePair qp, MemoryRegion region, long offset, long length, AccessFlags access) {
        checkOpen();
        region.checkUsable();
        if (region.protectionDomain() != pd) {
            throw new IllegalArgumentException(region + " is not of the protection domain of " + this);
        }
        if (qp != null) {
            checkQueuePair(qp);
        }
        if (!region.access().contains(AccessFlag.MW_BIND)) {
            throw new IllegalArgumentException(region + " was registered without AccessFlag.MW_BIND");
        }
        // LOCAL_WRITE is allowed (AccessFlags.of adds it to remote write) and not passed on: see windowAccess.
        int granted = windowAccess(access);
        if (granted == 0 || (access.mask() & ~(granted | AccessFlag.LOCAL_WRITE.value())) != 0) {
            throw new IllegalArgumentException("a window grants REMOTE_READ, REMOTE_WRITE or REMOTE_ATOMIC, not " + access);
        }
        if ((access.contains(AccessFlag.REMOTE_WRITE) || access.contains(AccessFlag.REMOTE_ATOMIC))
                && !region.access().contains(AccessFlag.LOCAL_WRITE)) {
            throw new IllegalArgumentException("remote write or atomics through a window need a region with "
                    + "AccessFlag.LOCAL_WRITE; " + region + " has " + region.access());
        }
        region.checkRange(offset, length);
    }

    /**
     * Checks that a bind may go through {@code qp}.
     *
     * @throws IllegalArgumentException when the QP is of another PD or neither RC nor UC
     */
    void checkQueuePair(QueuePair qp) {
        if (qp.protectionDomain() != pd) {
            throw new IllegalArgumentException(qp + " is not of the protection domain of " + this);
        }
        if (qp.type() != QpType.RC && qp.type() != QpType.UC) {
            throw new IllegalArgumentException("memory windows are bound through RC or UC QPs, not " + qp);
        }
    }

    /**
     * Records a type-2 bind that was posted: the window's new key (written where the provider reads the
     * window's current key for the next bind, as {@code ibv_bind_mw} does for type 1), its region and QP.
     */
    void posted(int newRkey, MemoryRegion region, QueuePair qp) {
        MemorySegment mw;
        try {
            mw = acquire();
        } catch (IllegalStateException closed) {
            // Closed since the post (its request holds it until the completion): its key matters no more.
            return;
        }
        try {
            ibv_mw.rkey(mw, newRkey);
        } finally {
            release();
        }
        hold(region);
        try {
            addOwner(qp);
        } catch (IllegalStateException closing) {
            // A QP whose close began on another thread takes no more children; the window stays owned
            // by its PD and context, which still close it.
        }
    }

    private synchronized void hold(MemoryRegion next) {
        if (deallocated) {
            return; // a close on another thread got here first: nothing would ever let the region go
        }
        if (region != next) {
            next.holdWindow();
            if (region != null) {
                region.releaseWindow();
            }
            region = next;
        }
    }

    @Override
    void destroy() {
        try {
            MemorySegment fn = ibv_context_ops.dealloc_mw(ops(ibv_mw.context(handle)));
            ProviderCalls.DEALLOC_MW.at(fn).callStatus(handle);
        } finally {
            synchronized (this) {
                deallocated = true;
                if (region != null) {
                    region.releaseWindow();
                    region = null;
                }
            }
        }
    }

    @Override
    public String toString() {
        return "MemoryWindow[" + type + ", " + pd.context().deviceName() + "]";
    }
}
