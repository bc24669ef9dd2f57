package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.memory.BufferSlabs;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.SharedReceivePool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.RdmaResourceException;
import rdmaflux.verbs.SharedReceiveQueue;

/**
 * A server's {@link SharedReceivePool} on one device: one SRQ in the loops' protection domain for the
 * device, one region of {@code buffers} receive buffers registered once, and the {@link SharedCredits}
 * that say which connections fit and when a credit may go back early. Each connection that joins gets a
 * {@link Share}, its {@link Receives}.
 *
 * <p>Why per server and not per loops: the pool's size and quota are the server's choice, and its memory
 * goes with the server, while loops outlive servers.
 *
 * <p>No SRQ limit event ({@code IBV_EVENT_SRQ_LIMIT_REACHED}) is armed: the credits keep the posted
 * buffers above what the peers may send at every moment (docs/protocol.md), so the pool knows exactly
 * how many are posted and when it may lend, and never needs to be told late, asynchronously, that it ran
 * low.
 *
 * <p>Threads: made on the CM loop, on the first connection accepted on the device; each {@link Share} is
 * guarded by its connection's {@link ConnectionLock} (the holder reposts its released buffers on the
 * SRQ, which {@code ibv_post_srq_recv} allows from several threads); the credits are guarded by
 * themselves. Freed once the server is disposed and the last connection on it is gone (its queue pair
 * destroyed and every message it held released): the SRQ is its queue pairs' owner, and closing it
 * earlier would destroy them under their connections.
 */
public final class ReceivePool implements AutoCloseable {
    private final SharedReceivePool spec;
    private final SharedCredits credits;
    private final SharedReceiveQueue srq;
    private final MemoryRegion mr;
    private final ReceiveSlot[] slots;
    private final int size;
    private volatile boolean disposed;
    private final java.util.concurrent.atomic.AtomicBoolean freed = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * CM loop: makes the SRQ and its buffers and posts them all.
     *
     * @param pd the loops' protection domain for the device
     * @param spec the pool's options
     * @param bufferSize the size of each buffer (the connections' {@link ConnectionOptions#bufferSize()})
     * @throws IllegalArgumentException when the device's SRQs hold fewer work requests than the buffers
     */
    public ReceivePool(ProtectionDomain pd, SharedReceivePool spec, int bufferSize) {
        this.spec = spec;
        this.size = bufferSize;
        int buffers = spec.buffers();
        int maxWr = pd.context().queryDevice().maxSrqWr();
        if (buffers > maxWr) {
            throw new IllegalArgumentException("SharedReceivePool.buffers " + buffers + " is more than the device "
                    + pd.context() + " allows in one shared receive queue (max_srq_wr " + maxWr + ")");
        }
        credits = new SharedCredits(buffers, spec.quota(), ConnectionOptions.CONTROL_RECEIVE_BUFFERS, spec.reserve(),
                spec.loanCap());
        srq = pd.createSharedReceiveQueue(buffers, 1, 0);
        MemoryRegion region = null;
        try {
            MemorySegment memory = BufferSlabs.allocate(Arena.ofAuto(), (long) size * buffers, 64);
            region = pd.register(memory);
            slots = new ReceiveSlot[buffers];
            int chunk = Math.min(buffers, 1024);
            ReceiveRequests batch = new ReceiveRequests(chunk, 1);
            for (int i = 0; i < buffers; i += chunk) {
                int n = Math.min(chunk, buffers - i);
                for (int j = 0; j < n; j++) {
                    int k = i + j;
                    slots[k] = new ReceiveSlot(null, k, memory.asSlice((long) size * k, size));
                    batch.set(j, Receives.TAG | k).sge(j, 0, region, (long) size * k, size);
                }
                srq.postReceive(batch, n);
            }
        } catch (RuntimeException | Error e) {
            srq.close();
            if (region != null) {
                region.close();
            }
            throw e;
        }
        mr = region;
        // The region's posted receives keep it registered until the SRQ is destroyed.
    }

    /** {@return the SRQ, for the queue pairs of the connections that join} */
    SharedReceiveQueue srq() {
        return srq;
    }

    /** {@return the credits each connection grants its peer} */
    int quota() {
        return spec.quota();
    }

    /** {@return the completions one connection's receives may have on its CQ at once} */
    int perConnection() {
        return spec.quota() + spec.loanCap() + ConnectionOptions.CONTROL_RECEIVE_BUFFERS;
    }

    /**
     * CM loop: a connection joins, if the pool holds its quota.
     *
     * @param lock the connection's lock
     * @return its receive side
     * @throws RdmaResourceException when the pool is full
     */
    Share join(ConnectionLock lock) {
        SharedCredits.Member m = credits.join();
        if (m == null) {
            throw new RdmaResourceException("accept", rdmaflux.verbs.Errno.ENOMEM, "the shared receive pool holds "
                    + credits.capacity() + " connections and is full (" + spec + ")");
        }
        return new Share(m, lock);
    }

    /** {@return the pool's credits, for tests} */
    SharedCredits credits() {
        return credits;
    }

    /** The server is disposed: the SRQ and region go once no connection uses them. Idempotent. */
    @Override
    public void close() {
        disposed = true;
        freeIfUnused();
    }

    /** {@return whether the SRQ and region were freed} */
    boolean isFreed() {
        return freed.get();
    }

    /** Frees the SRQ, then the region its receives reference, once disposed and no member is left. */
    private void freeIfUnused() {
        if (disposed && credits.members() == 0 && freed.compareAndSet(false, true)) {
            srq.close();
            mr.close();
        }
    }

    /** One connection's receive side on the pool; guarded by the connection's lock unless said. */
    final class Share implements Receives {
        private final SharedCredits.Member member;
        private final ConnectionLock lock;
        private final ReceiveRequests batch;
        private final ReceiveSlot[] reposting;
        private int reposts;
        private final ReleasedSlots releasedSlots = new ReleasedSlots();
        private volatile boolean left;

        private Share(SharedCredits.Member member, ConnectionLock lock) {
            this.member = member;
            this.lock = lock;
            // What one hold of the lock can repost: every buffer this connection can hold at once.
            int most = perConnection();
            batch = new ReceiveRequests(most, 1);
            reposting = new ReceiveSlot[most];
        }

        @Override
        public ReceiveSlot slot(long wrId) {
            ReceiveSlot slot = slots[(int) (wrId & ~TAG)];
            credits.landed(member);
            slot.owner(this);
            return slot;
        }

        @Override
        public boolean lend(ReceiveSlot slot) {
            if (!credits.lend(member)) {
                return false;
            }
            slot.lent = true;
            return true;
        }

        @Override
        public void failed(ReceiveSlot slot) {
            repost(slot);
        }

        @Override
        public void released(ReceiveSlot slot) {
            releasedSlots.push(slot);
            lock.offer();
        }

        @Override
        public boolean hasReleased() {
            return releasedSlots.any();
        }

        @Override
        public boolean takeReleased(boolean dead, CreditWindow window) {
            boolean credited = false;
            for (ReceiveSlot s = releasedSlots.takeAll(); s != null; ) {
                ReceiveSlot next = s.nextReleased;
                s.nextReleased = null;
                // The buffer goes back to the SRQ even when this connection is gone: the pool outlives it.
                if (s.counted) {
                    if (dead) {
                        window.dropped();
                    } else {
                        window.released();
                        credited = true;
                    }
                }
                repost(s);
                s = next;
            }
            return credited;
        }

        @Override
        public void repost(ReceiveSlot slot) {
            boolean wasLent = slot.lent;
            slot.lent = false;
            credits.reposted(member, wasLent);
            slot.disown();
            slot.state(ReceiveSlot.POSTED);
            int i = reposts++;
            reposting[i] = slot;
            batch.set(i, TAG | slot.index).sge(i, 0, mr, (long) size * slot.index, size);
        }

        @Override
        public boolean postReposts(CreditWindow window) {
            int n = reposts;
            if (n == 0) {
                return false; // credits are counted as the slots are taken (takeReleased), not here
            }
            reposts = 0;
            int done = n;
            try {
                srq.postReceive(batch, n);
            } catch (RuntimeException e) {
                done = batch.lastPosted(); // the server closed the pool: the rest is never filled again
            }
            for (int i = 0; i < n; i++) {
                if (i >= done) {
                    reposting[i].state(ReceiveSlot.DEAD);
                }
                reposting[i] = null;
            }
            if (left) {
                freeIfUnused(); // this connection's last buffers may be back
            }
            return false;
        }

        /** CM loop, after the queue pair was destroyed: nothing lands for this connection any more. */
        @Override
        public void close() {
            if (!left) {
                left = true;
                credits.leave(member);
                freeIfUnused();
            }
        }
    }
}
