package rdmaflux.cm;

import java.lang.foreign.MemorySegment;

/**
 * One receive buffer of an {@link RcQueue}: posted, or lent to the application as a message until
 * {@link #release()}.
 *
 * <p>The application gets a {@link #lend() view} of one delivery, not the slot: the buffer is reposted
 * and takes newer messages, and a reference kept past {@code release()} must keep failing (and a late
 * second release must not give back the newer message). Each delivery has a generation; a view works
 * only while the slot is delivered in its generation.
 *
 * <p>Threads: the completion loop delivers it; the application reads and releases it on any thread.
 * {@link #state} is the hand-over point (the generation is written before it); the queue's monitor
 * orders a release against teardown and against a newer delivery.
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
    /** Deliveries so far; written on the completion loop before {@link #state}. */
    private int generation;

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
        generation++;
        state = DELIVERED;
    }

    /** {@return what the application holds of this delivery: fails once it is released} */
    RdmaMessage lend() {
        return new Lent(this, generation);
    }

    /** {@return whether delivery {@code gen} is still the application's} */
    boolean isLent(int gen) {
        return state == DELIVERED && generation == gen;
    }

    /** {@return the current delivery's generation} */
    int generation() {
        return generation;
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
            owner.released(this, generation);
        }
    }

    /** One delivery of a slot, as the application holds it; any thread. */
    private record Lent(ReceiveSlot slot, int generation) implements RdmaMessage {
        private void check() {
            if (!slot.isLent(generation)) {
                throw new IllegalStateException("message used after release()");
            }
        }

        @Override
        public MemorySegment data() {
            check();
            MemorySegment d = slot.buffer.asSlice(0, slot.length);
            check(); // released (and maybe refilled) while slicing: no view of a newer message escapes
            return d;
        }

        @Override
        public int length() {
            check();
            return slot.length;
        }

        @Override
        public boolean isWriteNotification() {
            check();
            return slot.write;
        }

        @Override
        public int immediate() {
            check();
            return slot.imm;
        }

        @Override
        public void release() {
            if (slot.isLent(generation)) {
                slot.owner.released(slot, generation);
            }
        }

        @Override
        public String toString() {
            return "RdmaMessage[" + (slot.isLent(generation) ? slot.length + " bytes" : "released") + "]";
        }
    }
}
