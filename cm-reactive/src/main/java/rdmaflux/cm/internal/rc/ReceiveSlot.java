package rdmaflux.cm.internal.rc;

import rdmaflux.cm.internal.util.FieldHandles;
import rdmaflux.cm.RdmaMessage;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One receive buffer of a connection ({@link Receives}): posted, or lent to the application as a message until
 * {@link #release()}.
 *
 * <p>The application gets a {@link #lend() view} of one delivery, not the slot: the buffer is reposted
 * and takes newer messages, and a reference kept past {@code release()} must keep failing (and a late
 * second release must not give back the newer message). Each delivery has a generation; a view works
 * only while the slot is delivered in its generation.
 *
 * <p>Threads: the completion loop delivers it; the application reads and releases it on any thread.
 * {@link #stamp} (generation and state in one word) is the hand-over point: a release takes the delivery
 * with one compare-and-set, so exactly one release of a delivery counts and a stale view can never take a
 * newer one, and the taken slot waits on the queue's release stack (linked through {@link #nextReleased})
 * until the holder of the queue's lock reposts it.
 */
public final class ReceiveSlot implements RdmaMessage {
    static final int POSTED = 0;
    static final int DELIVERED = 1;
    static final int DEAD = 2;
    /** Released by the application, waiting on the queue's release stack to be reposted. */
    static final int RELEASING = 3;
    private static final VarHandle STAMP = FieldHandles.of(MethodHandles.lookup(), ReceiveSlot.class, "stamp",
            long.class);

    /**
     * Whose release stack the slot goes to: its connection's; for a slot of a {@link ReceivePool}, set by
     * the completion loop before each delivery (published to the releasing thread by {@link #stamp}) and
     * cleared when the slot goes back to the pool, so that a buffer does not keep the last connection it
     * served, and all that connection holds, reachable for as long as the pool lives. Volatile: the clearing
     * and the next delivery's setting run on different threads, ordered only through the device.
     */
    private volatile Receives owner;
    final int index;
    private final MemorySegment buffer;
    /** The delivery's generation (high bits) and the state (low two bits). */
    private volatile long stamp = POSTED;
    /** The next slot on the queue's release stack; written by the releasing thread before it pushes. */
    ReceiveSlot nextReleased;
    /** Whether the message took a credit (credits protocol: data and write notifications). */
    boolean counted;
    /** Whether the buffer is lent from a {@link ReceivePool}'s reserve (its credit went back at delivery). */
    boolean lent;
    private int length;
    private boolean write;
    private int imm;

    ReceiveSlot(Receives owner, int index, MemorySegment buffer) {
        this.owner = owner;
        this.index = index;
        this.buffer = buffer;
    }

    /**
     * Completion loop, before {@link #deliver}: the connection a pool's buffer landed on.
     *
     * @param receives that connection's receive side
     */
    void owner(Receives receives) {
        owner = receives;
    }

    /** Under its last owner's lock, as a pool's buffer is posted again: it belongs to no connection now. */
    void disown() {
        owner = null;
    }

    /** Completion loop: the buffer holds a message for the application. */
    void deliver(int len, boolean writeNotification, int immediate, boolean tookCredit) {
        length = len;
        write = writeNotification;
        imm = immediate;
        counted = tookCredit;
        stamp = ((long) (generation() + 1) << 2) | DELIVERED;
    }

    /** {@return the state: {@link #POSTED}, {@link #DELIVERED}, {@link #DEAD} or {@link #RELEASING}} */
    int state() {
        return (int) (stamp & 3);
    }

    /**
     * Sets the state, keeping the generation; by the queue (completion loop, or the holder of its lock for a
     * slot it took off the release stack), never racing a release: the slot is not delivered then.
     *
     * @param state the new state
     */
    void state(int state) {
        stamp = (stamp & ~3L) | state;
    }

    /** {@return what the application holds of this delivery: fails once it is released} */
    RdmaMessage lend() {
        return new Lent(this, generation());
    }

    /** {@return whether delivery {@code gen} is still the application's} */
    boolean isLent(int gen) {
        return stamp == (((long) gen << 2) | DELIVERED);
    }

    /** {@return the current delivery's generation} */
    int generation() {
        return (int) (stamp >>> 2);
    }

    /**
     * Any thread: takes delivery {@code gen} back from the application, once.
     *
     * @param gen the delivery released
     * @return whether this call took it (false: released before, or a stale view of an older delivery)
     */
    boolean take(int gen) {
        long lent = ((long) gen << 2) | DELIVERED;
        return STAMP.compareAndSet(this, lent, ((long) gen << 2) | RELEASING);
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
        if (state() != DELIVERED) {
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
        if (take(generation())) {
            owner.released(this);
        }
    }

    /**
     * One delivery of a slot, as the application holds it; any thread. {@link #retain()} is told on the
     * thread of the {@code onNext} that got it, and read there after it ({@link ReceivedMessages}).
     */
    private static final class Lent implements RdmaMessage, Retainable {
        private final ReceiveSlot slot;
        private final int generation;
        private boolean retained;

        Lent(ReceiveSlot slot, int generation) {
            this.slot = slot;
            this.generation = generation;
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
            if (slot.take(generation)) {
                slot.owner.released(slot);
            }
        }

        @Override
        public String toString() {
            return "RdmaMessage[" + (slot.isLent(generation) ? slot.length + " bytes" : "released") + "]";
        }
    }
}
