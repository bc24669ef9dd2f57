package rdmaflux.cm.internal.rc;

import java.nio.ByteBuffer;
import java.util.function.Function;

import rdmaflux.cm.MessageWriter;

/**
 * How one subscription of a {@link StreamSend} turns its messages into bytes: the content function's buffer,
 * or a {@link MessageWriter} that writes a message into its send buffer when it is posted (a large one at once,
 * into a heap buffer of its own that the rendezvous copies into registered memory).
 *
 * <p>Threads: {@link #bytes} and {@link #written} on the source's (or the draining) thread, one at a time;
 * {@link #write} under the send queue's lock.
 *
 * @param <T> the source's message type
 */
final class StreamContent<T> {
    private final Function<? super T, ? extends ByteBuffer> content;
    private final MessageWriter<? super T> writer;
    private final StreamTarget connection;
    /** The length of the message {@link #bytes} last left to the writer. */
    private int written;

    /** One of {@code content} and {@code writer} is null. */
    StreamContent(Function<? super T, ? extends ByteBuffer> content, MessageWriter<? super T> writer,
                  StreamTarget connection) {
        this.content = content;
        this.writer = writer;
        this.connection = connection;
    }

    /**
     * {@return the bytes of {@code message}} The content function's; with a writer, null for a message it
     * writes when posted ({@link #written} gives its length), and a buffer it wrote now for a large one.
     */
    ByteBuffer bytes(T message) {
        if (writer == null) {
            return content.apply(message);
        }
        int len = writer.length(message);
        if (len < 0) {
            throw new IllegalArgumentException("a MessageWriter's length() gave " + len);
        }
        written = len;
        if (len <= connection.eagerMessageSize()) {
            return null;
        }
        ByteBuffer large = ByteBuffer.allocate(len);
        writer.write(message, large);
        if (large.position() != len) {
            throw QueueSink.Written.wrongLength(large.position(), len);
        }
        return large.flip();
    }

    /** {@return the length of the message the last {@link #bytes} left to the writer} */
    int written() {
        return written;
    }

    /** Under the send queue's lock: writes {@code message} into its send buffer. */
    void write(T message, ByteBuffer target) {
        writer.write(message, target);
    }
}
