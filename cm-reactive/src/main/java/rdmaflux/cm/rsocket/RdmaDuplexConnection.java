package rdmaflux.cm.rsocket;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.rsocket.DuplexConnection;
import io.rsocket.RSocketErrorException;
import io.rsocket.frame.ErrorFrameCodec;
import org.reactivestreams.Subscription;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.MessageWriter;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaMessage;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.core.publisher.Sinks;

import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One RSocket connection over one {@link RdmaConnection}: each frame is one message.
 *
 * <p>{@link #sendFrame} queues the frame (any thread) for one long-lived send stream of the connection
 * ({@link RdmaConnection#send(org.reactivestreams.Publisher, MessageWriter,
 * java.util.function.Consumer)}), which takes frames as its send buffers and the peer's credits allow, in
 * order, writes each into its send buffer, and releases each once its send ended: a large frame is read by the peer in place, so its memory
 * must stay until then. No operator is assembled per frame. {@link #receive()} wraps
 * each message in a {@link MessageByteBuf} (a copy beyond the {@link ZeroCopyQuota}) and releases that
 * reference after RSocket's {@code onNext}, as Netty-based transports do: RSocket retains what it keeps.
 *
 * <p>Threads: received frames are signalled on the connection's scheduler
 * ({@link rdmaflux.cm.ConnectionOptions#scheduler()}; with the transports' default options, the thread that
 * handled the completions: the completion loop, or a thread that held the connection's lock then); sent
 * frames are released on it.
 */
final class RdmaDuplexConnection implements DuplexConnection {
    /** A frame's readable bytes, copied piece by piece into the send buffer (the frame's indexes unchanged). */
    private static final MessageWriter<ByteBuf> FRAMES = new MessageWriter<>() {
        @Override
        public int length(ByteBuf frame) {
            return frame.readableBytes();
        }

        @Override
        public void write(ByteBuf frame, ByteBuffer target) {
            frame.getBytes(frame.readerIndex(), target);
        }
    };
    private final RdmaConnection connection;
    private final ByteBufAllocator alloc;
    private final AtomicBoolean subscribed = new AtomicBoolean();
    /** Ends when the frame stream ended, on the thread that delivered its last frame. */
    private final Sinks.Empty<Void> framesEnded = Sinks.empty();
    private final FrameQueue outbound = new FrameQueue();
    /** The error frame after which the connection closes, once it was sent. */
    private volatile ByteBuf closeAfter;

    private final ZeroCopyQuota quota;

    RdmaDuplexConnection(RdmaConnection connection, ByteBufAllocator alloc, ConnectionOptions options) {
        this.connection = connection;
        this.alloc = alloc;
        this.quota = new ZeroCopyQuota(options);
        // Each frame writes itself into its send buffer: a composite one (header + payload) is not merged into
        // a buffer of its own first. A failed stream (the connection failed or closed) cancels the queue,
        // which releases what is left in it and everything offered later.
        connection.send(outbound, FRAMES, this::sent).subscribe(null, e -> { });
    }

    /**
     * Queues the frame; the connection's own frames (stream 0: keepalives, leases) go ahead of the streams'
     * frames still queued, as in rsocket-java's transports, so a long backlog cannot delay a keepalive past its
     * lifetime.
     */
    @Override
    public void sendFrame(int streamId, ByteBuf frame) {
        outbound.enqueue(frame, streamId == 0);
    }

    /** The connection's scheduler: a frame's send ended. */
    private void sent(ByteBuf frame) {
        boolean last = frame == closeAfter; // before the release, which may recycle the object
        frame.release();
        if (last) {
            connection.dispose();
        }
    }

    @Override
    public void sendErrorAndClose(RSocketErrorException e) {
        ByteBuf error = ErrorFrameCodec.encode(alloc, 0, e);
        closeAfter = error;
        outbound.enqueue(error);
        if (outbound.isCancelled()) {
            connection.dispose(); // nothing is sent any more: the error frame was released at once
        }
    }

    @Override
    public Flux<ByteBuf> receive() {
        return Flux.defer(() -> {
            if (!subscribed.compareAndSet(false, true)) {
                return Flux.error(new IllegalStateException("an RSocket connection's frames have one subscriber"));
            }
            Flux<ByteBuf> frames = connection.receive().map(this::frame)
                    // RSocket's contract: the frame stream never completes; a closed connection is an error.
                    .concatWith(Mono.error(ClosedChannelException::new));
            return frames.transform(Operators.<ByteBuf, ByteBuf>lift((scannable, actual) -> new Releaser(actual,
                    framesEnded)));
        });
    }

    /**
     * A received message as a frame: a view of its memory while the {@link ZeroCopyQuota} allows, else a copy
     * (and the message released at once).
     */
    private ByteBuf frame(RdmaMessage m) {
        int length = m.length();
        if (quota.tryTake(length, length > connection.eagerMessageSize())) {
            return new MessageByteBuf(alloc, m, quota);
        }
        try {
            ByteBuf copy = alloc.directBuffer(length, length);
            copy.writeBytes(m.data().asByteBuffer());
            return copy;
        } finally {
            m.release();
        }
    }

    @Override
    public ByteBufAllocator alloc() {
        return alloc;
    }

    @Override
    public SocketAddress remoteAddress() {
        return connection.remoteAddress();
    }

    /**
     * Completes once the connection is closed and its frame stream has ended: RSocket terminates its
     * streams on this signal, so it must come after the last frame on the thread that delivered it, or a
     * stream could see a frame after its error.
     */
    @Override
    public Mono<Void> onClose() {
        return connection.onDispose().then(Mono.defer(() -> subscribed.get() ? framesEnded.asMono() : Mono.empty()));
    }

    @Override
    public void dispose() {
        connection.dispose();
    }

    @Override
    public boolean isDisposed() {
        return connection.isDisposed();
    }

    @Override
    public String toString() {
        return "RdmaDuplexConnection[" + connection + "]";
    }

    /** Releases the transport's reference of each frame once its subscriber has seen it. */
    private static final class Releaser implements CoreSubscriber<ByteBuf>, Subscription {
        private final CoreSubscriber<? super ByteBuf> actual;
        private final Sinks.Empty<Void> ended;
        private Subscription upstream;

        Releaser(CoreSubscriber<? super ByteBuf> actual, Sinks.Empty<Void> ended) {
            this.actual = actual;
            this.ended = ended;
        }

        @Override
        public void onSubscribe(Subscription s) {
            if (Operators.validate(upstream, s)) {
                upstream = s;
                actual.onSubscribe(this);
            }
        }

        @Override
        public void onNext(ByteBuf frame) {
            try {
                actual.onNext(frame);
            } finally {
                frame.release();
            }
        }

        @Override
        public void onError(Throwable t) {
            actual.onError(t);
            ended.tryEmitEmpty();
        }

        @Override
        public void onComplete() {
            actual.onComplete();
            ended.tryEmitEmpty();
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            upstream.cancel();
            ended.tryEmitEmpty();
        }

        @Override
        public reactor.util.context.Context currentContext() {
            return actual.currentContext();
        }
    }
}
