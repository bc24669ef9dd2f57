package rdmaflux.cm.internal.rc;

import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;

import rdmaflux.cm.RdmaLeakDetection;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.internal.leak.LeakTracker;

/**
 * A message the {@linkplain RdmaLeakDetection leak detector} tracks: the application's object of one delivery,
 * which records the stack of each access to its bytes and of {@link #retain()} (reading its length or flags
 * records nothing: a stack walk per call would double what a frame decoder pays) and, when the garbage
 * collector finds it unreachable unreleased, is reported and its delivery released. The tracker holds the delivery, never this object, so this one can become
 * unreachable while the delivery waits for its release.
 *
 * <p>Threads: any, as the delivery it wraps; {@link #retain()} as {@link Retainable} says.
 */
final class TrackedMessage implements RdmaMessage, Retainable {
    private final RdmaMessage delivery;
    private final LeakTracker.Tracker tracker;

    /**
     * @param delivery an object of one delivery (a {@linkplain ReceiveSlot#lend() lent slot} or a
     *                 {@link LargeReceive}), whose release is idempotent
     */
    private TrackedMessage(RdmaMessage delivery, String connection, int length) {
        this.delivery = delivery;
        this.tracker = LeakTracker.track(this, delivery::release, connection, length);
    }

    /**
     * {@return {@code message} as the application gets it: tracked when the detector samples it}
     *
     * @param message the delivery as it would go out ({@code ReceiveSlot} when messages are recycled)
     * @param connection the connection, for a report
     */
    static RdmaMessage maybeTrack(RdmaMessage message, String connection) {
        if (!LeakTracker.sample()) {
            return message;
        }
        return new TrackedMessage(message instanceof ReceiveSlot slot ? slot.lend() : message, connection,
                message.length());
    }

    @Override
    public MemorySegment data() {
        tracker.touch();
        return delivery.data();
    }

    @Override
    public int length() {
        return delivery.length();
    }

    @Override
    public ByteBuffer asByteBuffer() {
        tracker.touch();
        return delivery.asByteBuffer();
    }

    @Override
    public byte[] toByteArray() {
        tracker.touch();
        return delivery.toByteArray();
    }

    @Override
    public boolean isWriteNotification() {
        return delivery.isWriteNotification();
    }

    @Override
    public int immediate() {
        return delivery.immediate();
    }

    @Override
    public RdmaMessage retain() {
        tracker.touch();
        delivery.retain();
        return this;
    }

    @Override
    public boolean retained() {
        return delivery instanceof Retainable r && r.retained();
    }

    @Override
    public void release() {
        tracker.close();
        delivery.release();
        // The tracker reports this object once it is unreachable: not while its own release runs.
        Reference.reachabilityFence(this);
    }

    @Override
    public String toString() {
        return delivery.toString();
    }
}
