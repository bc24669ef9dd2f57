package rdmaflux.cm.internal.rc;

import java.nio.ByteBuffer;

import reactor.core.publisher.MonoSink;

/**
 * What a stream sends through: its connection, which refuses elements once it cannot send and holds
 * the send lock ({@link ConnectionLock}, reentrant) across a run of elements so they are posted together.
 */
public interface StreamTarget {
    /**
     * Sends one element, or fails {@code sink} with the connection's refusal.
     *
     * @param message the element's bytes; null when {@code sink} is a {@link QueueSink.Written} that writes them
     *                into its send buffer (at most {@link #eagerMessageSize()} bytes)
     * @param sink completes when the send completed
     */
    void sendElement(ByteBuffer message, MonoSink<Object> sink);

    /** {@return the largest message sent as one SEND: a larger one goes by the rendezvous, from a buffer} */
    int eagerMessageSize();

    /** {@return the send lock, or {@code null} before the connection is established} */
    ConnectionLock sendLock();
}
