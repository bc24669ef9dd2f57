package rdmaflux.cm.internal.memory;

import rdmaflux.cm.ConnectionOptions;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

import rdmaflux.verbs.MemoryRegion;

/**
 * A connection's registered send memory: the send buffers messages are copied into (one per slot, of
 * {@link ConnectionOptions#bufferSize()}), and the atomic result words (8 bytes per send-queue entry), both
 * blocks of the loops' {@link BufferSlabs} (regions registered once per protection domain), so the
 * connection gives them back itself ({@link #close()}).
 *
 * <p>Threads: made and closed on the CM loop; slots taken and freed under the connection's lock.
 */
public final class SendBuffers {
    private static final ValueLayout.OfLong BIG_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BIG_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private final int size;
    private final BufferSlabs.Block block;
    private final BufferSlabs.Block atomicBlock;
    private final MemorySegment memory;
    private final MemorySegment atomics;
    private final int[] free;
    private int top;
    /**
     * Per slot, a ByteBuffer view of its memory, made on the slot's first use: copying a message in through
     * it allocates nothing (MemorySegment.ofBuffer would wrap each message).
     */
    private final ByteBuffer[] views;

    /**
     * CM loop: carves the memory from {@code slabs}; on failure what was carved is given back before the
     * throw.
     *
     * @param size bytes per send buffer
     * @param count send buffers
     * @param atomicWords atomic result words (one per send-queue entry)
     */
    public SendBuffers(BufferSlabs slabs, Arena arena, int size, int count, int atomicWords) {
        this.size = size;
        block = slabs.carve(arena, (long) size * count);
        try {
            atomicBlock = slabs.carve(arena, 8L * atomicWords);
        } catch (RuntimeException | Error e) {
            block.free();
            throw e;
        }
        memory = block.memory();
        atomics = atomicBlock.memory();
        free = new int[count];
        for (int i = 0; i < count; i++) {
            free[i] = count - 1 - i;
        }
        top = count;
        views = new ByteBuffer[count];
    }

    /** {@return whether a send buffer is free} */
    public boolean available() {
        return top > 0;
    }

    /** {@return a free send buffer's slot; call only when {@link #available()}} */
    public int take() {
        return free[--top];
    }

    /** Gives back a slot {@link #take()} gave. */
    public void free(int slot) {
        free[top++] = slot;
    }

    /** {@return where slot {@code slot} starts in {@link #region()} (the block's slab)} */
    public long offset(int slot) {
        return block.offset() + (long) size * slot;
    }

    /** {@return the region of the send buffers: the slab their block is in} */
    public MemoryRegion region() {
        return block.region();
    }

    /** Copies {@code len} bytes of {@code data} from its position into slot {@code slot} (position unchanged). */
    public void copy(int slot, ByteBuffer data, int len) {
        view(slot).put(0, data, data.position(), len);
    }

    /**
     * {@return slot {@code slot}'s memory as a buffer: position 0, limit the slot's size} It is the same object
     * on each call; whoever changes its position or limit sets them back with {@code clear()}.
     */
    public ByteBuffer view(int slot) {
        ByteBuffer v = views[slot];
        if (v == null) {
            v = memory.asSlice((long) size * slot, size).asByteBuffer();
            views[slot] = v;
        }
        return v;
    }

    /** Writes a large message's descriptor (its address, key and length, big-endian) into slot {@code slot}. */
    public void descriptor(int slot, long address, int rkey, int length) {
        long off = (long) size * slot;
        memory.set(BIG_LONG, off, address);
        memory.set(BIG_INT, off + 8, rkey);
        memory.set(BIG_INT, off + 12, length);
    }

    /** {@return the region of the atomic result words: the slab their block is in} */
    public MemoryRegion atomicRegion() {
        return atomicBlock.region();
    }

    /** {@return where send-queue entry {@code index}'s atomic result word is in {@link #atomicRegion()}} */
    public long atomicOffset(int index) {
        return atomicBlock.offset() + 8L * index;
    }

    /** {@return the value an atomic operation of send-queue entry {@code index} returned} */
    public long atomicResult(int index) {
        return atomics.get(ValueLayout.JAVA_LONG, 8L * index);
    }

    /** CM loop, after the QP is destroyed: gives both blocks back to their slabs (idempotent). */
    public void close() {
        block.free();
        atomicBlock.free();
    }
}
