package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.internal.memory.BufferSlabs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.MemoryRegion;

/**
 * One large message on its way in ({@link Rendezvous}): the peer's descriptor (held in its receive slot,
 * whose credit returns when the application releases the message), the registered region this side
 * RDMA-READs it into, and, once read, the message the application gets.
 *
 * <p>Its memory is a block of the connections' slabs ({@link BufferSlabs}) for a message of at most
 * {@link BufferSlabs#MAX_BLOCK}, or else a region registered for it alone.
 *
 * <p>Threads: the completion loop creates and delivers it; a worker, or the thread that admits it when a
 * slab has a free block, allocates its region; the
 * application reads and releases it on any thread; {@link #state} is the hand-over point.
 */
public final class LargeReceive implements RdmaMessage, Retainable {
    static final int WAITING = 0;
    static final int READING = 1;
    static final int READ = 2;
    static final int DELIVERED = 3;
    static final int RELEASED = 4;

    private final Rendezvous owner;
    /** The receive slot the descriptor landed in; released with this message. */
    final ReceiveSlot descriptor;
    final long remoteAddress;
    final int rkey;
    final int length;
    volatile int state = WAITING;
    /** Set under the queue's lock when its READ was posted: from then on the device writes the region. */
    boolean readPosted;
    /** Guarded by the queue's lock: the offset of the next piece to read, and the bytes read so far. */
    int nextRead;
    int bytesRead;
    Arena arena;
    MemorySegment memory;
    MemoryRegion region;
    /** Where {@link #memory} starts in {@link #region}. */
    long regionOffset;
    /** The slab block that holds {@link #memory}, or null. */
    BufferSlabs.Block block;

    /** Told by the application's {@code onNext}, read on its thread after it ({@link ReceivedMessages}). */
    private boolean retained;

    LargeReceive(Rendezvous owner, ReceiveSlot descriptor, long remoteAddress, int rkey, int length) {
        this.owner = owner;
        this.descriptor = descriptor;
        this.remoteAddress = remoteAddress;
        this.rkey = rkey;
        this.length = length;
    }

    private void check() {
        if (state != DELIVERED) {
            throw new IllegalStateException("message used after release()");
        }
    }

    @Override
    public MemorySegment data() {
        check();
        return memory;
    }

    @Override
    public int length() {
        check();
        return length;
    }

    @Override
    public boolean isWriteNotification() {
        check();
        return false;
    }

    @Override
    public int immediate() {
        check();
        return 0;
    }

    @Override
    public RdmaMessage retain() {
        retained = true;
        return this;
    }

    @Override
    public boolean retained() {
        return retained;
    }

    @Override
    public void release() {
        owner.released(this);
    }

    /** Frees the region (idempotent). The caller makes sure the device no longer writes it. */
    void free() {
        if (block != null) {
            block.free();
            block = null;
            region = null;
        }
        if (region != null) {
            region.close();
            region = null;
        }
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }

    /** Reads into {@code b} (its owner frees it with {@link #free()}). */
    void readInto(BufferSlabs.Block b) {
        block = b;
        region = b.region();
        regionOffset = b.offset();
        memory = b.memory();
    }
}
