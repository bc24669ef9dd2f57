package rdmaflux.cm;

import java.lang.foreign.MemorySegment;

/**
 * One receive buffer of an {@link RcQueue}: posted, or lent to the application as a message until
 * {@link #release()}.
 *
 * <p>Threads: the completion loop delivers it; the application reads and releases it on any thread.
 * {@link #state} is the hand-over point; the queue's monitor orders a release against teardown.
 */
final class ReceiveSlot implements RdmaMessage {
    static final int POSTED = 0;
    static final int DELIVERED = 1;
    static final int DEAD = 2;

    private final RcQueue owner;
    final int index;
    private final MemorySegment buffer;
    volatile int state = POSTED;
    /** Whether the message took a credit (credits protocol: data and write notifications). */
    boolean counted;
    private int length;
    private boolean write;
    private int imm;

    ReceiveSlot(RcQueue owner, int index, MemorySegment buffer) {
        this.owner = owner;
        this.index = index;
        this.buffer = buffer;
    }

    /** Completion loop: the buffer holds a message for the application. */
    void deliver(int len, boolean writeNotification, int immediate, boolean tookCredit) {
        length = len;
        write = writeNotification;
        imm = immediate;
        counted = tookCredit;
        state = DELIVERED;
    }

    /** {@return the whole buffer, whatever the state (for the queue's checks before delivering)} */
    MemorySegment rawData() {
        return buffer;
    }

    /** {@return the length delivered, whatever the state (for the queue's own bookkeeping)} */
    int rawLength() {
        return length;
    }

    private void check() {
        if (state != DELIVERED) {
            throw new IllegalStateException("message used after release()");
        }
    }

    @Override
    public MemorySegment data() {
        check();
        return buffer.asSlice(0, length);
    }

    @Override
    public int length() {
        check();
        return length;
    }

    @Override
    public boolean isWriteNotification() {
        check();
        return write;
    }

    @Override
    public int immediate() {
        check();
        return imm;
    }

    @Override
    public void release() {
        if (state == DELIVERED) {
            owner.released(this);
        }
    }
}
