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
     * @param message the element's bytes
     * @param sink completes when the send completed
     */
    void sendElement(ByteBuffer message, MonoSink<Object> sink);

    /** {@return the send lock, or {@code null} before the connection is established} */
    ConnectionLock sendLock();
}
