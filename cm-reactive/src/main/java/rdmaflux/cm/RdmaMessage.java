package rdmaflux.cm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * A received message: a zero-copy view of the registered receive buffer it landed in.
 *
 * <p>The buffer is lent, not given: call {@link #release()} when done (or copy first with
 * {@link #toByteArray()}). Releasing re-posts the buffer and returns a credit to the sender, so
 * holding messages is how a slow consumer slows the sender down; never releasing stalls the
 * connection. Release each message exactly once, then drop it: by default
 * ({@link ConnectionOptions#recycledMessages()}) a message is its receive buffer's own object and comes
 * back with the next message that lands in that buffer. Until then any access after release throws
 * {@link IllegalStateException}; after, the object is the newer message. With
 * {@code recycledMessages(false)} each message is an object of its own, and any access after release
 * throws for good.
 *
 * <p>A message that becomes unreachable without {@code release()} is a leak: {@link RdmaLeakDetection}
 * (sampled by default) reports where it was received and last touched, and releases it. A message it
 * tracks is an object of its own whatever {@code recycledMessages} says.
 */
public interface RdmaMessage {
    /** {@return the payload, valid until {@link #release()}} */
    MemorySegment data();

    /** {@return the payload length in bytes} */
    int length();

    /** {@return a read-only big-endian view of the payload, valid until {@link #release()}} */
    default ByteBuffer asByteBuffer() {
        return data().asByteBuffer().asReadOnlyBuffer();
    }

    /** {@return a copy of the payload} */
    default byte[] toByteArray() {
        return data().toArray(ValueLayout.JAVA_BYTE);
    }

    /** {@return whether this is the notification of the peer's RDMA write with immediate (no payload)} */
    boolean isWriteNotification();

    /** {@return the immediate data of a write notification, 0 otherwise} */
    int immediate();

    /**
     * Keeps this message past the {@code onNext} of an {@linkplain RdmaMessageFlux#autoRelease() auto-releasing
     * receive}: it is not released when {@code onNext} returns, and {@link #release()} is then the caller's.
     * A message of {@link RdmaConnection#receive()} subscribed as it is is always the subscriber's to release,
     * and this does nothing to it.
     *
     * @return this message
     */
    default RdmaMessage retain() {
        return this;
    }

    /**
     * Returns the buffer to the connection. A second call does nothing while the buffer holds no newer
     * message; once it does, a recycled message (the default) is that newer message, so release once.
     */
    void release();
}
