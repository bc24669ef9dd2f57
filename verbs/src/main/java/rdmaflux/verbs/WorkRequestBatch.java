package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.nio.ByteOrder;

import rdmaflux.verbs.ffi.ibv_sge;

/**
 * Common part of {@link SendRequests} and {@link ReceiveRequests}: a pre-allocated native array of work
 * requests, each with its own scatter/gather slots. Filling and posting writes native memory in place
 * and allocates nothing on the Java heap, so the same batch is reused for every message; a field is only
 * written when its value changed since the last time.
 *
 * <p>Memory safety: each scatter/gather entry set from a {@link MemoryRegion} or a {@link MemorySegment}
 * remembers it (a reference in a preallocated array, no allocation). Posting checks every entry it posts
 * and fails with {@link IllegalStateException} before the provider is called when a region is closed or
 * memory was freed (its arena closed). Each posted request holds a work lease on its regions (and a send's
 * address handle, a bind's window and region) until its completion is polled or its QP is destroyed: a
 * {@code close()} of one of them meanwhile takes effect at once for new uses and defers the native
 * destroy until then. An entry set from a raw address ({@link #sge(int, int, long, int, int)}) cannot be
 * checked or leased: the caller vouches for it.
 *
 * <p>Not thread-safe: one batch per posting thread (or guarded by the caller).
 *
 * @param <T> the concrete batch type, for fluent setters
 */
public abstract sealed class WorkRequestBatch<T extends WorkRequestBatch<T>> permits SendRequests, ReceiveRequests {
    /** How many requests the last {@link #postRecorded} posted; the posting thread's. */
    private int lastPosted;

    private static final long SGE_SIZE = ibv_sge.sizeof();
    private static final long SGE_ADDR = ibv_sge.addr$offset();
    private static final long SGE_LENGTH = ibv_sge.length$offset();
    private static final long SGE_LKEY = ibv_sge.lkey$offset();
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private final int capacity;
    private final int maxSge;
    private final long wrSize;
    private final long wrIdOffset;
    private final long nextOffset;
    private final long numSgeOffset;
    /** The requests, then their scatter/gather entries, in one native block. */
    final MemorySegment wrs;
    private final long sgeBase;
    private final MemorySegment badWr;
    /**
     * What this batch last wrote to each 4-byte word of {@link #wrs} (index: byte offset / 4). Only this
     * batch writes the block, and providers only read posted requests, so a value equal to its shadow is
     * already in native memory and is not written again: from one message to the next usually only the
     * id changes, and a native write costs several times a Java array read (most under C1).
     */
    private final int[] shadow;
    /**
     * Per request, the scatter/gather entries in use. {@code set} resets the count and {@code sge} raises
     * it again, so it is kept here and reaches native memory when the request is posted, only if it
     * differs from last time (in native memory every message would cost two writes).
     */
    private final int[] sgeCounts;
    /** Per scatter/gather slot ({@code maxSge * i + j}), the region it was set from, or null. */
    private final MemoryRegion[] regions;
    /** Per scatter/gather slot, the segment it was set from (a region's own memory too), or null. */
    private final MemorySegment[] segments;
    /**
     * Work leases taken by {@link #link}, handed to a {@link WorkRing} by {@link #record} or given back by
     * {@link #unlink}; the first {@link #leased} are held.
     */
    private final NativeResource[] leases;
    private int leased;
    /** Per linked request, one past its last lease in {@link #leases}. */
    private final int[] leaseEnds;

    WorkRequestBatch(int capacity, int maxSge, long wrSize, long wrAlign, long wrIdOffset, long nextOffset,
                     long sgListOffset, long numSgeOffset) {
        if (capacity <= 0 || maxSge <= 0) {
            throw new IllegalArgumentException("capacity and maxSge must be > 0, got " + capacity + ", " + maxSge);
        }
        this.capacity = capacity;
        this.maxSge = maxSge;
        this.wrSize = wrSize;
        this.wrIdOffset = wrIdOffset;
        this.nextOffset = nextOffset;
        this.numSgeOffset = numSgeOffset;
        // Every field of both structs is 4-byte aligned and 4 or 8 bytes wide, which the shadow relies on.
        this.sgeBase = wrSize * capacity;
        long bytes = sgeBase + SGE_SIZE * capacity * maxSge;
        if (bytes / 4 > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("batch too large: " + capacity + " requests x " + maxSge + " entries");
        }
        Arena arena = Arena.ofAuto();
        this.wrs = arena.allocate(bytes, Math.max(wrAlign, 8));
        this.badWr = arena.allocate(ValueLayout.ADDRESS);
        this.shadow = new int[(int) (bytes / 4)];
        this.sgeCounts = new int[capacity];
        this.regions = new MemoryRegion[capacity * maxSge];
        this.segments = new MemorySegment[capacity * maxSge];
        // One per entry, plus one per request for a UD send's address handle.
        this.leases = new NativeResource[capacity * (maxSge + 2)];
        this.leaseEnds = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            // Each request owns a fixed slice of the SGE array, so sg_list never changes after this.
            putLong(wrSize * i + sgListOffset, wrs.address() + sgeBase + SGE_SIZE * maxSge * i);
        }
    }

    /** {@return how many requests one post can chain} */
    public final int capacity() {
        return capacity;
    }

    /** {@return scatter/gather slots per request} */
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

    /** Writes an int field of the block unless it already holds that value. */
    final void putInt(long offset, int value) {
        int k = (int) (offset >>> 2);
        if (shadow[k] != value) {
            shadow[k] = value;
            wrs.set(ValueLayout.JAVA_INT, offset, value);
        }
    }

    /** Writes a long field of the block unless it already holds that value (compared as its two halves). */
    final void putLong(long offset, long value) {
        int k = (int) (offset >>> 2);
        int first = (int) (LITTLE_ENDIAN ? value : value >>> 32);
        int second = (int) (LITTLE_ENDIAN ? value >>> 32 : value);
        if (shadow[k] != first || shadow[k + 1] != second) {
            shadow[k] = first;
            shadow[k + 1] = second;
            wrs.set(ValueLayout.JAVA_LONG, offset, value);
        }
    }

    /** {@return an int field of the block as this batch last wrote it, read from the shadow} */
    final int shadowInt(long offset) {
        return shadow[(int) (offset >>> 2)];
    }

    /** {@return a long field of the block as this batch last wrote it, read from the shadow} */
    private long shadowLong(long offset) {
        int k = (int) (offset >>> 2);
        long first = Integer.toUnsignedLong(shadow[k]);
        long second = Integer.toUnsignedLong(shadow[k + 1]);
        return LITTLE_ENDIAN ? first | second << 32 : second | first << 32;
    }

    /** Clears the request's scatter/gather list; called by the subclasses' {@code set}. */
    final void resetSges(int i) {
        sgeCounts[i] = 0;
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
        putSge(i, j, address, length, lkey);
        int slot = maxSge * i + j;
        regions[slot] = null;
        segments[slot] = null;
        return self();
    }

    private void putSge(int i, int j, long address, int length, int lkey) {
        offset(i);
        if (j < 0 || j >= maxSge) {
            throw new IllegalArgumentException("scatter/gather entry " + j + " exceeds this batch's " + maxSge
                    + " entries per request");
        }
        if (length < 0) {
            throw new IllegalArgumentException("negative length " + length);
        }
        long sge = sgeBase + SGE_SIZE * ((long) maxSge * i + j);
        putLong(sge + SGE_ADDR, address);
        putInt(sge + SGE_LENGTH, length);
        putInt(sge + SGE_LKEY, lkey);
        if (j >= sgeCounts[i]) {
            sgeCounts[i] = j + 1;
        }
    }

    /**
     * Sets scatter/gather entry {@code j} of request {@code i} to a whole segment. Unlike the raw-address
     * form, posting checks that the segment's memory is still allocated.
     *
     * @param i request index
     * @param j entry index, below {@link #maxSge()}
     * @param segment registered memory (for inline sends, any memory), at most {@code Integer.MAX_VALUE} bytes
     * @param lkey the local key of the region containing the segment
     * @return this
     * @throws IllegalStateException when the segment's memory was already freed
     * @throws IllegalArgumentException when the segment is longer than an entry can describe
     */
    public final T sge(int i, int j, MemorySegment segment, int lkey) {
        if (!segment.scope().isAlive()) {
            throw freed(segment);
        }
        if (segment.byteSize() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a scatter/gather entry holds at most " + Integer.MAX_VALUE
                    + " bytes, not " + segment.byteSize());
        }
        putSge(i, j, segment.address(), (int) segment.byteSize(), lkey);
        int slot = maxSge * i + j;
        regions[slot] = null;
        segments[slot] = segment;
        return self();
    }

    private static IllegalStateException freed(MemorySegment segment) {
        return new IllegalStateException("the memory at 0x" + Long.toHexString(segment.address())
                + " was freed (its arena is closed); it cannot be posted");
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
        region.checkUsable();
        region.checkRange(offset, length);
        putSge(i, j, region.address() + offset, length, region.lkey());
        int slot = maxSge * i + j;
        regions[slot] = region;
        segments[slot] = null;
        return self();
    }

    /** {@return the scatter/gather entries request {@code i} uses} */
    final int sgeCount(int i) {
        offset(i);
        return sgeCounts[i];
    }

    /**
     * Checks the first {@code count} requests against the queue's limits and writes what posting them
     * needs: entry counts, immediates (send requests) and the {@code next} links of a NULL-terminated chain.
     * Takes a work lease on every region and address handle the requests use and checks every remembered
     * segment is still allocated; on success the caller must hand the leases to a ring ({@link #record}) or
     * give them back ({@link #unlink()}).
     *
     * @throws IllegalStateException when a region or address handle is closed or memory was freed (no
     *                               lease is then held)
     */
    final void link(int count, int queueMaxSge) {
        if (count < 1 || count > capacity) {
            throw new IllegalArgumentException("can post 1.." + capacity + " requests from this batch, not " + count);
        }
        for (int k = 0; k < count; k++) {
            int n = sgeCounts[k];
            if (n > queueMaxSge) {
                throw new IllegalArgumentException("work request " + k + " has " + n
                        + " scatter/gather entries; the queue accepts at most " + queueMaxSge);
            }
            long wr = wrSize * k;
            putInt(wr + numSgeOffset, n);
            linkExtra(wr, k);
            putLong(wr + nextOffset, k == count - 1 ? 0L : wrs.address() + wrSize * (k + 1));
        }
        // Last, so that nothing after a lease can throw before the caller's finally gives it back.
        try {
            for (int k = 0; k < count; k++) {
                int n = sgeCounts[k];
                int base = maxSge * k;
                for (int j = 0; j < n; j++) {
                    MemoryRegion r = regions[base + j];
                    if (r != null) {
                        r.acquireWork();
                        leases[leased++] = r;
                        if (!r.segment().scope().isAlive()) {
                            r.checkUsable();
                        }
                    } else {
                        MemorySegment m = segments[base + j];
                        if (m != null && !m.scope().isAlive()) {
                            throw freed(m);
                        }
                    }
                }
                // At most two (a bind's window and region), and a bind has no entries: the array holds them.
                for (int x = 0; x < 2; x++) {
                    NativeResource extra = leaseExtra(k, x);
                    if (extra == null) {
                        break;
                    }
                    extra.acquireWork();
                    leases[leased++] = extra;
                }
                leaseEnds[k] = leased;
            }
        } catch (RuntimeException e) {
            unlink();
            throw e;
        }
    }

    /**
     * Records the first {@code count} linked requests in a work queue's ring and hands it their leases;
     * the batch holds none afterwards.
     *
     * @return the ring's mark before them, for {@link WorkRing#rollback}
     */
    final long record(WorkRing ring, int count) {
        long mark = ring.mark();
        int from = 0;
        for (int k = 0; k < count; k++) {
            ring.begin(shadowLong(wrSize * k + wrIdOffset));
            int to = leaseEnds[k];
            for (int x = from; x < to; x++) {
                ring.add(leases[x]);
                leases[x] = null;
            }
            from = to;
        }
        leased = 0;
        return mark;
    }

    /** Writes the fields of request {@code i} that the subclass keeps on the Java side until posting. */
    abstract void linkExtra(long wrOffset, int i);

    /**
     * {@return resource {@code k} (0, then 1) that request {@code i} references besides its entries (a UD send's
     * AH; a bind's window and region), or null after the last}
     */
    NativeResource leaseExtra(int i, int k) {
        return null;
    }

    /** Gives back the leases {@link #link} took. */
    final void unlink() {
        for (int k = 0; k < leased; k++) {
            leases[k].releaseWork();
            leases[k] = null;
        }
        leased = 0;
    }

    /** Links the first {@code count} requests (see {@link #link}) and returns the chain's head. */
    final MemorySegment chain(int count, int queueMaxSge) {
        link(count, queueMaxSge);
        unlink();
        return wrs;
    }

    /**
     * Calls a provider's post function on the requests {@link #link} prepared.
     *
     * @param fn the provider's {@code post_send}, {@code post_recv} or {@code post_srq_recv}
     * @param queue the address of the leased QP or SRQ
     * @return the function's result: 0, or an errno
     */
    final int post(MemorySegment fn, long queue) {
        try {
            return ProviderCalls.post(fn, queue, wrs.address(), badWr.address());
        } finally {
            // The call got raw addresses: keep the auto arena behind them alive until it returns.
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Posts the first {@code count} requests to {@code target} (a QP or an SRQ) with its provider function,
     * recording them in its work queue's {@code ring} before the call, so that a completion never comes
     * before its entry; the entries of requests the provider refused are taken back. The caller holds the
     * work queue's lock, which stands for a lease on {@code target}: its close waits for the lock.
     *
     * @param target the QP or SRQ
     * @param ring its work queue's ring
     * @param fn the provider's post function
     * @param handle the target's native handle
     * @param count how many requests, from index 0
     * @param queueMaxSge the most scatter/gather entries the queue takes per request
     * @return the function's result: 0, or an errno; {@link #lastPosted()} says how many were posted
     * @throws IllegalStateException when {@code target} is closed
     */
    final int postRecorded(NativeResource target, WorkRing ring, MemorySegment fn, MemorySegment handle, int count,
                           int queueMaxSge) {
        lastPosted = 0; // a post refused before the call (a closed target) posted nothing
        link(count, queueMaxSge);
        if (target.isClosed()) {
            unlink();
            throw target.closedException();
        }
        long mark = record(ring, count);
        ring.publish();
        int rc = -1;
        int n = 0;
        try {
            rc = post(fn, handle.address());
            n = rc == 0 ? count : postedBeforeFailure();
        } finally {
            ring.rollback(mark + n);
        }
        lastPosted = n;
        return rc;
    }

    /** Before a post's checks: a post they refuse posted nothing. */
    final void unposted() {
        lastPosted = 0;
    }

    /**
     * {@return how many requests the last post of this batch handed to the device: all of them when it
     * succeeded, those before the rejected one when it failed}
     */
    public final int lastPosted() {
        return lastPosted;
    }

    /** {@return how many requests the last failed post posted: those before the rejected one (0 if unknown)} */
    final int postedBeforeFailure() {
        long bad = badWr.get(ValueLayout.JAVA_LONG, 0);
        long index = bad == 0 ? -1 : (bad - wrs.address()) / wrSize;
        return index < 0 || index >= capacity ? 0 : (int) index;
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
