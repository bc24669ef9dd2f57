package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import rdmaflux.verbs.ffi.ibv_sge;

/**
 * Common part of {@link SendRequests} and {@link ReceiveRequests}: a pre-allocated native array of work
 * requests, each with its own scatter/gather slots. Filling and posting writes native memory in place
 * and allocates nothing on the Java heap, so the same batch is reused for every message.
 *
 * <p>Not thread-safe: one batch per posting thread (or guarded by the caller).
 *
 * @param <T> the concrete batch type, for fluent setters
 */
public abstract sealed class WorkRequestBatch<T extends WorkRequestBatch<T>> permits SendRequests, ReceiveRequests {
    private static final long SGE_SIZE = ibv_sge.sizeof();
    private static final long SGE_ADDR = ibv_sge.addr$offset();
    private static final long SGE_LENGTH = ibv_sge.length$offset();
    private static final long SGE_LKEY = ibv_sge.lkey$offset();

    private final int capacity;
    private final int maxSge;
    private final long wrSize;
    private final long nextOffset;
    private final long numSgeOffset;
    final MemorySegment wrs;
    private final MemorySegment sges;
    private final MemorySegment badWr;

    WorkRequestBatch(int capacity, int maxSge, long wrSize, long wrAlign, long wrIdOffset, long nextOffset,
                     long sgListOffset, long numSgeOffset) {
        if (capacity <= 0 || maxSge <= 0) {
            throw new IllegalArgumentException("capacity and maxSge must be > 0, got " + capacity + ", " + maxSge);
        }
        this.capacity = capacity;
        this.maxSge = maxSge;
        this.wrSize = wrSize;
        this.nextOffset = nextOffset;
        this.numSgeOffset = numSgeOffset;
        Arena arena = Arena.ofAuto();
        this.wrs = arena.allocate(wrSize * capacity, wrAlign);
        this.sges = arena.allocate(SGE_SIZE * capacity * maxSge, 8);
        this.badWr = arena.allocate(ValueLayout.ADDRESS);
        for (int i = 0; i < capacity; i++) {
            // Each request owns a fixed slice of the SGE array, so sg_list never changes after this.
            wrs.set(ValueLayout.JAVA_LONG, wrSize * i + sgListOffset, sges.address() + SGE_SIZE * maxSge * i);
        }
    }

    /** @return how many requests one post can chain */
    public final int capacity() {
        return capacity;
    }

    /** @return scatter/gather slots per request */
    public final int maxSge() {
        return maxSge;
    }

    @SuppressWarnings("unchecked")
    private T self() {
        return (T) this;
    }

    final long offset(int i) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("work request " + i + " of " + capacity);
        }
        return wrSize * i;
    }

    /** Clears the request's scatter/gather list; called by the subclasses' {@code set}. */
    final void resetSges(long wrOffset) {
        wrs.set(ValueLayout.JAVA_INT, wrOffset + numSgeOffset, 0);
    }

    /**
     * Sets scatter/gather entry {@code j} of request {@code i}; the request's entry count grows to
     * include it.
     *
     * @param i request index
     * @param j entry index, below {@link #maxSge()}
     * @param address start address of registered memory (for inline sends, any memory)
     * @param length bytes
     * @param lkey the local key of the region containing the range
     * @return this
     */
    public final T sge(int i, int j, long address, int length, int lkey) {
        long wr = offset(i);
        if (j < 0 || j >= maxSge) {
            throw new IllegalArgumentException("scatter/gather entry " + j + " exceeds this batch's " + maxSge
                    + " entries per request");
        }
        if (length < 0) {
            throw new IllegalArgumentException("negative length " + length);
        }
        long sge = SGE_SIZE * ((long) maxSge * i + j);
        sges.set(ValueLayout.JAVA_LONG, sge + SGE_ADDR, address);
        sges.set(ValueLayout.JAVA_INT, sge + SGE_LENGTH, length);
        sges.set(ValueLayout.JAVA_INT, sge + SGE_LKEY, lkey);
        int n = wrs.get(ValueLayout.JAVA_INT, wr + numSgeOffset);
        if (j >= n) {
            wrs.set(ValueLayout.JAVA_INT, wr + numSgeOffset, j + 1);
        }
        return self();
    }

    /**
     * Sets scatter/gather entry {@code j} of request {@code i} to a range of a memory region.
     *
     * @param i request index
     * @param j entry index
     * @param region the registered region
     * @param offset bytes from the region's start
     * @param length bytes
     * @return this
     */
    public final T sge(int i, int j, MemoryRegion region, long offset, int length) {
        region.checkRange(offset, length);
        return sge(i, j, region.address() + offset, length, region.lkey());
    }

    /** @return the scatter/gather entries request {@code i} uses */
    final int sgeCount(int i) {
        return wrs.get(ValueLayout.JAVA_INT, offset(i) + numSgeOffset);
    }

    /** Links the first {@code count} requests into a NULL-terminated chain and returns its head. */
    final MemorySegment chain(int count, int qpMaxSge) {
        if (count < 1 || count > capacity) {
            throw new IllegalArgumentException("can post 1.." + capacity + " requests from this batch, not " + count);
        }
        long base = wrs.address();
        for (int k = 0; k < count; k++) {
            long wr = wrSize * k;
            int n = wrs.get(ValueLayout.JAVA_INT, wr + numSgeOffset);
            if (n > qpMaxSge) {
                throw new IllegalArgumentException("work request " + k + " has " + n
                        + " scatter/gather entries; the queue accepts at most " + qpMaxSge);
            }
            wrs.set(ValueLayout.JAVA_LONG, wr + nextOffset, k == count - 1 ? 0L : base + wrSize * (k + 1));
        }
        return wrs;
    }

    final MemorySegment badWr() {
        return badWr;
    }

    /** Turns a post's errno into an exception naming the request the provider rejected. */
    final RdmaException postFailure(String operation, int errno, long wrIdOffset) {
        long bad = badWr.get(ValueLayout.JAVA_LONG, 0);
        long index = bad == 0 ? -1 : (bad - wrs.address()) / wrSize;
        String detail = index < 0 || index >= capacity ? null
                : "work request " + index + " (wr_id=" + wrs.get(ValueLayout.JAVA_LONG, wrSize * index + wrIdOffset)
                + ") was rejected; it and the ones after it were not posted";
        return RdmaException.of(operation, errno, detail);
    }
}
