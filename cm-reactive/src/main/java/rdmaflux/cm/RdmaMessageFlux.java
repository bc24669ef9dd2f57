package rdmaflux.cm;

import java.io.ByteArrayOutputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Mono;

/**
 * The messages of {@link RdmaConnection#receive()}, in two styles, as Reactor Netty's {@code ByteBufFlux}:
 * <ul>
 *   <li>subscribed as it is, each {@link RdmaMessage} is the subscriber's to {@link RdmaMessage#release()}:
 *       zero-copy, and with {@link ConnectionOptions#recycledMessages()} no allocation per message;
 *   <li>through {@link #autoRelease()}, rdmaflux releases each message once the subscriber's {@code onNext}
 *       returned, unless the subscriber {@linkplain RdmaMessage#retain() retained} it; {@link #asByteArray()},
 *       {@link #asString()} and {@link #aggregate()} copy each payload and release its message at once.
 * </ul>
 * Either way a message that never reaches the subscriber (still queued when it cancels) is released for it.
 *
 * <p>Made by rdmaflux only; not meant to be extended by applications.
 *
 * <p>Threads: as any {@link Flux}; signals arrive on the connection's
 * {@linkplain ConnectionOptions#scheduler() scheduler}.
 */
public abstract class RdmaMessageFlux extends FluxOperator<RdmaMessage, RdmaMessage> {

    /**
     * Wraps a connection's messages.
     *
     * @param source the connection's messages
     */
    protected RdmaMessageFlux(Flux<? extends RdmaMessage> source) {
        super(source);
    }

    @Override
    public void subscribe(CoreSubscriber<? super RdmaMessage> actual) {
        source.subscribe(actual);
    }

    /**
     * The messages, each released by rdmaflux once the subscriber's {@code onNext} returned: the style for code
     * that does not manage releases. What the subscriber (or an operator of it) keeps past its {@code onNext}
     * must be {@linkplain RdmaMessage#retain() retained} there, and is then the subscriber's to release. Each
     * message is an object of its own delivery, so one used after its release throws
     * {@link IllegalStateException}, whatever {@link ConnectionOptions#recycledMessages()} says. A message an
     * operator drops ({@code filter}) is released too, as its {@code onNext} returned.
     *
     * @return the messages, released after each {@code onNext}
     */
    public abstract Flux<RdmaMessage> autoRelease();

    /** {@return each payload as a copy; every message released at once} */
    public final Flux<byte[]> asByteArray() {
        return copied(RdmaMessage::toByteArray);
    }

    /** {@return each payload decoded as UTF-8; every message released at once} */
    public final Flux<String> asString() {
        return asString(StandardCharsets.UTF_8);
    }

    /**
     * Each payload decoded as text.
     *
     * @param charset the payloads' encoding
     * @return each payload decoded; every message released at once
     */
    public final Flux<String> asString(Charset charset) {
        return copied(m -> charset.decode(m.asByteBuffer()).toString());
    }

    /**
     * Each message turned into a copy, then released. The message never leaves {@code copy}, so it needs no
     * object of its own delivery, as {@link #autoRelease()} gives: no allocation beyond the copy.
     */
    private <T> Flux<T> copied(Function<RdmaMessage, T> copy) {
        return map(m -> {
            try {
                return copy.apply(m);
            } finally {
                m.release();
            }
        });
    }

    /**
     * All payloads until the stream ends, one after the other, in one array: for a peer that sends a whole
     * (a file, a reply in parts) and then closes. Every message released once copied.
     *
     * @return the payloads, joined, when the peer closed in order; the connection's failure otherwise
     */
    public final Mono<byte[]> aggregate() {
        return asByteArray()
                .collect(ByteArrayOutputStream::new, (out, payload) -> out.write(payload, 0, payload.length))
                .map(ByteArrayOutputStream::toByteArray);
    }
}
