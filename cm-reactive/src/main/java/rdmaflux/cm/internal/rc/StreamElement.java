package rdmaflux.cm.internal.rc;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

import reactor.core.Disposable;
import reactor.core.publisher.MonoSink;
import reactor.util.context.Context;
import rdmaflux.cm.internal.util.FieldHandles;

/**
 * One message's sink: counts its end; withdraws it while it is still queued, where it waits as itself.
 * One per place in the window, reused for the message after (see {@code StreamSend.Sender#take}); it is its own
 * "ended" flag.
 *
 * @param <T> the source's message type
 */
final class StreamElement<T> implements QueueSink.Written, QueueSink.Withdrawable {
    private static final VarHandle ENDED = FieldHandles.of(MethodHandles.lookup(), StreamElement.class, "ended",
            boolean.class);

    private volatile boolean ended;
    private final StreamSend.Sender<T> sender;
    /** Its place in the window, or -1 (a message beyond the source's demand). */
    final int slot;
    /** The source's message while {@code release} is owed it; null without a release callback. */
    T message;
    /** The bytes, while the message is queued or posted; null when the writer writes them. */
    private ByteBuffer data;
    /** The message the stream's writer writes into the send buffer when posted; null with {@code data}. */
    private T toWrite;
    /** The length of {@code toWrite}. */
    private int length;
    /** Its message's place in the stream (1, 2, ...): what is withdrawn goes last first. */
    long order;
    /** The next ended element waiting for its release. */
    StreamElement<T> next;
    /** Set under the send queue's lock when the message waits there as itself; null once it ended. */
    private volatile SendQueue queue;
    /** Withdraws a large message's waiting request (which is not the element); null once it ended. */
    private volatile Disposable request;

    StreamElement(StreamSend.Sender<T> sender, int slot) {
        this.sender = sender;
        this.slot = slot;
    }

    /**
     * The source's thread, holding the slot: starts the element's next message, the {@code order}-th: its bytes
     * in {@code data}, or written when posted from {@code toWrite}, {@code length} bytes.
     */
    void use(T message, ByteBuffer data, T toWrite, int length, long order) {
        this.order = order;
        this.message = message;
        this.data = data;
        this.toWrite = data == null ? toWrite : null;
        this.length = length;
        this.queue = null;
        this.request = null;
        this.ended = false;
    }

    void withdraw() {
        SendQueue q = queue;
        if (q != null) {
            q.withdraw(this);
        } else {
            Disposable d = request;
            if (d != null) {
                d.dispose();
            }
        }
    }

    @Override
    public ByteBuffer data() {
        return data;
    }

    @Override
    public int length() {
        return length;
    }

    @Override
    public void writeTo(ByteBuffer target) {
        if (sender.ended()) {
            // Queued behind a message whose write failed (or the stream was cancelled): posting it would leave
            // a gap in what arrives, where a prefix of the stream is promised.
            throw new java.util.concurrent.CancellationException("the stream ended before this message was posted");
        }
        sender.write(toWrite, target);
    }

    @Override
    public void waiting(SendQueue q) {
        queue = q;
    }

    /** Under the send queue's lock: it took the message off its queue, so no completion will come. */
    @Override
    public void withdrawn() {
        end(null);
    }

    private void end(Throwable error) {
        if (ENDED.compareAndSet(this, false, true)) {
            queue = null;
            request = null;
            data = null;
            toWrite = null;
            sender.finished(this, error);
        }
    }

    @Override
    public void success() {
        end(null);
    }

    @Override
    public void success(Object value) {
        end(null);
    }

    @Override
    public void error(Throwable e) {
        end(e);
    }

    @Override
    public Context currentContext() {
        return sender.currentContext();
    }

    @Override
    public MonoSink<Object> onCancel(Disposable d) {
        request = d; // only a large message's request: a small one waits as the element itself
        return this;
    }
}
