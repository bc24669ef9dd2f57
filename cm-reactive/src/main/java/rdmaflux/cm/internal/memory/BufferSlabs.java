package rdmaflux.cm.internal.memory;

import rdmaflux.cm.internal.rc.ReceiveRing;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicBoolean;

import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;

/**
 * Connections' own small buffers (receive rings, send buffers, atomic result words, and the regions large
 * messages of at most {@link #MAX_BLOCK} are read into), carved from slabs:
 * regions registered once in a protection domain, each cut into blocks of one power of two (a slab holds
 * {@link #BLOCKS_PER_SLAB} blocks, at least a page and at most {@link #MAX_SLAB} bytes). Setting up a
 * connection whose buffers are small then makes no {@code ibv_reg_mr} in the common case, where it made
 * three per side on the CM loop (and as many {@code ibv_dereg_mr} when it ended).
 *
 * <p>A block is reused by another connection once freed. A received message stays readable until
 * released, even after its connection ended, so a receive ring whose queue pair is gone retires its block
 * instead of freeing it while a message of it is still held ({@link ReceiveRing#close}).
 *
 * <p>A block larger than {@link #MAX_BLOCK} gets a registration of its own, as before slabs: rounding it
 * up to a power of two would pin up to twice its memory.
 *
 * <p>Lifetime: a block goes back to its slab with {@link Block#free()} (idempotent), which its owner calls
 * once no work request can use it any more (its queue pair is destroyed) and nothing writes it any more
 * (the send side is closed), or with {@link Block#retire()} when the application may still read it (a
 * received message it holds past its connection): then the block is never handed out again. A slab whose
 * blocks are all back, free or retired, is deregistered at once, so kernel objects go back to their
 * baseline with the last connection. Slab memory comes from an automatic arena, like a connection's own
 * buffers, so a retired block stays readable while anything references it.
 *
 * <p>Threads: any; guarded by {@code this}. A slab's registration runs under the lock: it is one call for
 * many connections.
 */
public final class BufferSlabs {
    /** Blocks per slab, for small blocks: one registration serves this many connections. */
    static final int BLOCKS_PER_SLAB = 64;
    /** The largest slab: it pins this much while any of its blocks is in use. */
    static final long MAX_SLAB = 256 * 1024;
    /** The smallest slab: a page. */
    private static final long MIN_SLAB = 4096;
    /** The largest block carved from a slab; larger ones are registered on their own. */
    public static final long MAX_BLOCK = 64 * 1024;
    /** The smallest block: a cache line, so blocks never share one. */
    private static final int MIN_SHIFT = 6;
    private static final int MAX_SHIFT = Long.numberOfTrailingZeros(MAX_BLOCK);

    /** A registered block of memory: {@link #region()} with {@link #memory()} at {@link #offset()} in it. */
    public static final class Block {
        private final MemoryRegion region;
        private final long offset;
        private final MemorySegment memory;
        /** Its slab, or null for a block with a registration of its own. */
        private final Slab slab;
        private final int index;
        private final AtomicBoolean freed = new AtomicBoolean();

        private Block(MemoryRegion region, long offset, MemorySegment memory, Slab slab, int index) {
            this.region = region;
            this.offset = offset;
            this.memory = memory;
            this.slab = slab;
            this.index = index;
        }

        /** {@return the region that holds the block: scatter/gather entries name it with {@link #offset()}} */
        public MemoryRegion region() {
            return region;
        }

        /** {@return where the block starts in {@link #region()}} */
        public long offset() {
            return offset;
        }

        /** {@return the block's memory} */
        public MemorySegment memory() {
            return memory;
        }

        /** The block is free again: no work request uses it and nothing writes it (idempotent, any thread). */
        public void free() {
            back(true);
        }

        /**
         * Like {@link #free()}, for a block whose memory someone may still read (a message held past its
         * connection): it is never handed out again, and its slab is deregistered once every other block is
         * back (the memory itself stays allocated while anything references it). A block with a registration
         * of its own is closed as by {@link #free()}.
         */
        public void retire() {
            back(false);
        }

        private void back(boolean reusable) {
            if (!freed.compareAndSet(false, true)) {
                return;
            }
            if (slab == null) {
                region.close();
            } else {
                slab.owner.give(slab, index, reusable);
            }
        }
    }

    /** One registration cut into blocks of one size. */
    private static final class Slab {
        final BufferSlabs owner;
        final MemoryRegion region;
        final int shift;
        /** Free block indices, a stack; guarded by the owner. */
        final int[] free;
        int freeCount;
        /** Blocks {@link Block#retire() retired}: back, but never handed out again; guarded by the owner. */
        int retired;

        Slab(BufferSlabs owner, MemoryRegion region, int shift) {
            this.owner = owner;
            this.region = region;
            this.shift = shift;
            this.free = new int[(int) (slabBytes(shift) >>> shift)];
            for (int i = 0; i < free.length; i++) {
                free[i] = free.length - 1 - i;
            }
            freeCount = free.length;
        }
    }

    private final ProtectionDomain pd;
    /** Per block size (index: shift - MIN_SHIFT), the slabs with a free block; guarded by this. */
    @SuppressWarnings("unchecked")
    private final ArrayDeque<Slab>[] open = new ArrayDeque[MAX_SHIFT - MIN_SHIFT + 1];
    /** Slabs registered now; guarded by this. */
    private int slabs;

    BufferSlabs(ProtectionDomain pd) {
        this.pd = pd;
        for (int i = 0; i < open.length; i++) {
            open[i] = new ArrayDeque<>();
        }
    }

    /**
     * A registered block of at least {@code bytes}, aligned to 64 bytes.
     *
     * @param arena where a block too large for a slab is allocated (the caller's, as without slabs)
     * @param bytes how many
     * @return the block, to be {@link Block#free() freed} by its owner
     * @throws rdmaflux.verbs.RdmaResourceException when the memory or its registration is refused
     */
    public Block carve(Arena arena, long bytes) {
        if (bytes > MAX_BLOCK) {
            MemorySegment memory = BufferSlabs.allocate(arena, bytes, 64);
            return new Block(pd.register(memory), 0, memory, null, -1);
        }
        int shift = shiftOf(bytes);
        synchronized (this) {
            Block b = take(shift, bytes);
            if (b != null) {
                return b;
            }
            MemorySegment memory = BufferSlabs.allocate(Arena.ofAuto(), slabBytes(shift), 4096);
            open[shift - MIN_SHIFT].addFirst(new Slab(this, pd.register(memory), shift));
            slabs++;
            return take(shift, bytes);
        }
    }

    /**
     * A block of at least {@code bytes} from a slab already registered, or none: unlike {@link #carve}, it
     * never registers (a slab's {@code ibv_reg_mr} can take milliseconds), so a loop may call it.
     *
     * @param bytes how many
     * @return the block, to be {@link Block#free() freed} by its owner, or null when {@code bytes} is larger
     *         than a slab's blocks or no slab of that size has a free block
     */
    public Block tryCarve(long bytes) {
        if (bytes > MAX_BLOCK) {
            return null;
        }
        synchronized (this) {
            return take(shiftOf(bytes), bytes);
        }
    }

    private static int shiftOf(long bytes) {
        return Math.max(MIN_SHIFT, 64 - Long.numberOfLeadingZeros(Math.max(1, bytes) - 1));
    }

    /** Guarded by this: a free block of {@code 1 << shift} bytes from an open slab, or null. */
    private Block take(int shift, long bytes) {
        ArrayDeque<Slab> candidates = open[shift - MIN_SHIFT];
        Slab s = candidates.peekFirst();
        if (s == null) {
            return null;
        }
        int index = s.free[--s.freeCount];
        if (s.freeCount == 0) {
            candidates.removeFirst();
        }
        long offset = (long) index << shift;
        return new Block(s.region, offset, s.region.segment().asSlice(offset, bytes), s, index);
    }

    /** {@return the bytes of a slab of blocks of {@code 1 << shift} bytes} */
    private static long slabBytes(int shift) {
        return Math.min(MAX_SLAB, Math.max(MIN_SLAB, (long) BLOCKS_PER_SLAB << shift));
    }

    /**
     * A block came back: to be handed out again ({@code reusable}), or retired. A slab with every block back
     * is deregistered.
     */
    private void give(Slab s, int index, boolean reusable) {
        MemoryRegion empty = null;
        synchronized (this) {
            ArrayDeque<Slab> candidates = open[s.shift - MIN_SHIFT];
            if (reusable) {
                if (s.freeCount == 0) {
                    candidates.addLast(s);
                }
                s.free[s.freeCount++] = index;
            } else {
                s.retired++;
            }
            if (s.freeCount + s.retired == s.free.length) {
                candidates.remove(s);
                slabs--;
                empty = s.region;
            }
        }
        if (empty != null) {
            empty.close(); // no block of it is posted any more: every owner's queue pair is gone
        }
    }

    /** {@return the slabs registered now (tests)} */
    synchronized int slabCount() {
        return slabs;
    }

    /**
     * Allocates a connection's buffers. Running out of direct memory (the JVM's limit, by default the
     * heap's maximum) fails that one connection with a typed error that says what to change, rather than
     * escaping its loop as an {@link OutOfMemoryError}.
     *
     * @param arena where the memory lives
     * @param bytes how much
     * @param align its alignment
     * @return the memory
     * @throws rdmaflux.verbs.RdmaResourceException when the JVM refuses the memory
     */
    public static MemorySegment allocate(Arena arena, long bytes, long align) {
        try {
            return arena.allocate(bytes, align);
        } catch (OutOfMemoryError e) {
            rdmaflux.verbs.RdmaResourceException x = new rdmaflux.verbs.RdmaResourceException("allocate",
                    rdmaflux.verbs.Errno.ENOMEM, bytes + " bytes of connection buffers: " + e.getMessage()
                    + "; raise -XX:MaxDirectMemorySize or use smaller buffers (ConnectionOptions.bufferSize, "
                    + "receiveBuffers, sendBuffers)");
            x.initCause(e);
            throw x;
        }
    }
}
