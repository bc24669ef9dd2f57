package rdmaflux.cm;

import java.nio.ByteBuffer;

/**
 * Writes the messages of {@link RdmaConnection#send(org.reactivestreams.Publisher, MessageWriter,
 * java.util.function.Consumer)} straight into the connection's registered send buffers: a message made of
 * several pieces (a header and a body, a Netty composite buffer, an object serialized on the fly) goes out
 * without first being gathered into one buffer of its own.
 *
 * <p>A message of up to {@link RdmaConnection#eagerMessageSize()} bytes is written into its send buffer when it
 * is posted: under the connection's send lock, on the thread that posts it (the source's, or the completion
 * loop's when it had to wait for a credit). {@link #write} must therefore be quick, must not block and must
 * not keep {@code target}. A larger message is written once, on the source's thread, into a heap buffer of
 * its own, which then goes as a large message of {@link RdmaConnection#send(org.reactivestreams.Publisher)}
 * does: copied into registered memory that the peer reads.
 *
 * @param <T> the message type
 */
public interface MessageWriter<T> {
    /**
     * {@return the message's length in bytes} Called once per message, on the thread that emitted it.
     *
     * @param message a message of the stream
     */
    int length(T message);

    /**
     * Writes the message's bytes into {@code target}, whose position is 0 and whose limit is
     * {@link #length}: exactly that many bytes, with relative puts, leaving the position at the limit.
     * {@code target} is valid only during the call. An exception thrown here fails the stream as the
     * content function's would.
     *
     * @param message the message
     * @param target where its bytes go
     */
    void write(T message, ByteBuffer target);
}
