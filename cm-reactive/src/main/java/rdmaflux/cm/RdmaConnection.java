package rdmaflux.cm;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import java.util.function.Function;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * A reliable RDMA connection (an RC queue pair set up by the connection manager) with a reactive API.
 *
 * <p><b>Threads.</b> The connection manager and completion threads never run application code:
 * every signal (send completions, received messages, connection results) is delivered on
 * {@link ConnectionOptions#scheduler()} (by default the loops' {@linkplain RdmaLoops#scheduler() signal
 * threads}).
 *
 * <p><b>Messages.</b> {@link #send} copies the payload into a registered send buffer and completes
 * when the device reports the send done. {@link #receive} lends each message's receive buffer until
 * {@link RdmaMessage#release()}. With the default {@link ConnectionOptions.Protocol#CREDITS} protocol
 * the sender only sends into receive buffers the peer has re-posted, so a slow consumer slows the
 * sender down instead of causing RNR errors or losing messages.
 *
 * <p><b>Closing.</b> {@link #dispose()} sends an orderly close, disconnects and frees every native
 * resource; {@link #onDispose()} completes when that is done. A peer's orderly close completes
 * {@link #receive()}; a peer that vanishes (crash, kill) ends it with
 * {@link RdmaCmException.Disconnected}, and pending operations fail with that exception. A connection
 * that failed (its peer went away or broke the protocol, {@link RdmaCmException.ProtocolViolation}; a work
 * request failed) frees itself, and operations started afterwards fail with the same exception; after
 * {@link #dispose()} they fail with {@link IllegalStateException}.
 */
public interface RdmaConnection extends RdmaDisposable {

    /**
     * Connects with default options.
     *
     * @param remote the server's address (an IP of its RDMA interface) and port
     * @return the connection once established; cancelling it releases everything made so far
     */
    static Mono<RdmaConnection> connect(InetSocketAddress remote) {
        return connect(remote, ConnectionOptions.defaults());
    }

    /**
     * Connects.
     *
     * @param remote the server's address and port
     * @param options buffers, timeouts, protocol
     * @return the connection once established; fails with an {@link RdmaCmException} subtype naming the
     *         step, or {@link rdmaflux.verbs.RdmaUnavailableException} when RDMA is not usable here
     */
    static Mono<RdmaConnection> connect(InetSocketAddress remote, ConnectionOptions options) {
        return Implementation.connect(remote, options);
    }

    /** {@return this side's address} */
    InetSocketAddress localAddress();

    /** {@return the peer's address} */
    InetSocketAddress remoteAddress();

    /** {@return the application private data the peer sent while connecting (without rdmaflux's header)} */
    byte[] peerPrivateData();

    /**
     * {@return the largest message the peer accepts: 2<sup>31</sup>-1 bytes when both sides speak large
     * messages (the {@link ConnectionOptions.Protocol#CREDITS} protocol), else {@link #eagerMessageSize()}}
     */
    int maxMessageSize();

    /**
     * {@return the largest message sent in one piece into one of the peer's receive buffers (the smaller
     * buffer size of the two sides); larger ones go by RDMA READ (docs/protocol.md)}
     */
    int eagerMessageSize();

    /**
     * RDMA reads and atomics this side keeps in flight, as the connection was established
     * ({@link ConnectionOptions.Builder#initiatorDepth ConnectionOptions.Builder.initiatorDepth}, at most what
     * the peer accepts); more are queued by the device.
     *
     * @return the QP's {@code max_rd_atomic}
     * @throws IllegalStateException once the connection is closed
     */
    int initiatorDepth();

    /**
     * RDMA reads and atomics from the peer this side accepts in flight
     * ({@link ConnectionOptions.Builder#responderResources ConnectionOptions.Builder.responderResources}).
     *
     * @return the QP's {@code max_dest_rd_atomic}
     * @throws IllegalStateException once the connection is closed
     */
    int responderResources();

    /** {@return the current state, then every change} */
    Flux<ConnectionState> states();

    /**
     * Sends a message. The bytes between position and limit are copied when the send is posted, which
     * may be after subscription if the peer has no buffer free; don't modify them until the Mono ends.
     *
     * <p>A message up to {@link #eagerMessageSize()} is copied into a registered send buffer and sent.
     * A larger one (up to {@link #maxMessageSize()}) is copied once into memory registered for it, which
     * the peer reads with RDMA READ; the Mono completes when the peer has read it. Either way messages
     * arrive in the order they were sent. Cancelling a send that is still queued withdraws it: its bytes
     * are never read after the cancel. A send already posted cannot be withdrawn; it completes or fails
     * with the connection.
     *
     * @param message the payload, at most {@link #maxMessageSize()} bytes
     * @return completes when the send completed; {@link IllegalArgumentException} for an oversized
     *         message, {@link IllegalStateException} after close, the connection's failure after it failed
     */
    Mono<Void> send(ByteBuffer message);

    /**
     * Sends a message.
     *
     * @param message the payload, at most {@link #maxMessageSize()} bytes
     * @return completes when the send completed
     */
    Mono<Void> send(MemorySegment message);

    /**
     * Sends a message straight out of memory registered with {@link #register}, without copying it: a
     * small one is posted from it, a large one is read by the peer where it is (if the registration has
     * {@code REMOTE_READ}; else that memory is registered once more for the peer to read, still without a
     * copy). The registration is leased until the device is done with it: closing it meanwhile defers the
     * deregistration ({@link RegisteredBuffer#close()}). Don't modify the memory until the Mono ends.
     *
     * @param message a buffer from this connection's {@link #register}, at most {@link #maxMessageSize()}
     *                bytes
     * @return completes when the send completed (for a large message: when the peer has read it);
     *         {@link IllegalArgumentException} for a buffer of another connection or an oversized one,
     *         {@link IllegalStateException} when the registration or the connection is closed
     */
    Mono<Void> send(RegisteredBuffer message);

    /**
     * Sends a stream of messages in order, pipelining up to the send buffers' worth.
     *
     * @param messages the payloads
     * @return completes when all were sent, or fails with the first failure
     */
    Mono<Void> send(Publisher<? extends ByteBuffer> messages);

    /**
     * Sends a stream of messages that own their memory (pooled or reference-counted buffers, say) as
     * {@link #send(Publisher)} does, and hands each one back once the connection no longer reads it, so
     * its owner can reclaim it: a small message is copied into a send buffer when posted, a large one is
     * read by the peer in place until it finished. Nothing is assembled per message.
     *
     * <p>{@code release} is called exactly once for every message the source emits: after its send
     * completed, failed or was withdrawn (the stream cancelled or failed while it was queued), or at once
     * when it arrives after the stream ended. It runs on the connection's scheduler, in batches, or on the
     * source's thread for a message that never reached the connection; it must not block.
     *
     * @param messages the messages, in order
     * @param content a message's bytes, called once per message on the thread that emitted it; the buffer's
     *                memory must stay valid until {@code release} is told that message
     * @param release told each message once the connection is done with its memory
     * @param <T> the message type
     * @return completes when all were sent, or fails with the first failure (then queued messages are
     *         withdrawn and the source is cancelled)
     */
    <T> Mono<Void> send(Publisher<T> messages, Function<? super T, ? extends ByteBuffer> content,
                        Consumer<? super T> release);

    /**
     * Sends a stream of messages as {@link #send(Publisher, Function, Consumer)} does, but each message writes
     * itself into its registered send buffer ({@link MessageWriter}) instead of handing over one buffer with
     * its bytes: a message in pieces is not gathered into a buffer of its own first. {@code release} is
     * called exactly once per message, once the connection no longer reads it: after its send completed,
     * failed or was withdrawn, or at once for a message that arrives after the stream ended.
     *
     * @param messages the messages, in order
     * @param writer each message's length and bytes
     * @param release told each message once the connection is done with it
     * @param <T> the message type
     * @return completes when all were sent, or fails with the first failure (a writer's exception, or a
     *         writer that wrote other than its length, among them)
     */
    <T> Mono<Void> send(Publisher<T> messages, MessageWriter<? super T> writer, Consumer<? super T> release);

    /**
     * The messages the peer sends, in order. One subscriber only. Release each message the subscriber gets.
     * Messages the connection received that never reach the subscriber are released for it: those still
     * queued when it cancels (a {@code take(n)}, a {@code timeout}, an error thrown by an operator after this
     * flux) and those arriving afterwards. A message an operator drops after it got it (a {@code filter}
     * returning false) is that operator's discard: add {@code doOnDiscard(RdmaMessage.class,
     * RdmaMessage::release)} after such operators, or receive through {@link RdmaMessageFlux#autoRelease()},
     * which releases every message once the subscriber's {@code onNext} returned.
     *
     * @return the messages; completes when the peer closes, fails if the connection does
     */
    RdmaMessageFlux receive();

    /**
     * {@link #receive()} as copies, each buffer released at once: {@code receive().asByteArray()}.
     *
     * @return the payloads
     */
    Flux<byte[]> receiveBytes();

    /**
     * Registers memory for sends and one-sided operations, in the protection domain that this connection
     * shares with every connection of its {@link RdmaLoops} on the same device: the buffer works on any of
     * them. Memory already registered there with the same address, length and access is not registered
     * again: the buffer is a view of the existing region, and a lease of its own on it
     * ({@link RegisteredBuffer#close()}). The lease ends when closed or when this connection ends,
     * whichever comes first; the region is deregistered when its last lease ended.
     *
     * @param memory native memory that outlives the registration
     * @param access {@link AccessFlags#LOCAL_WRITE} to be the local side only; remote flags to let the
     *               peer read, write or run atomics on it
     * @return the registration
     * @throws IllegalStateException when the connection is not established or closed
     * @throws IllegalArgumentException for heap or empty memory
     */
    RegisteredBuffer register(MemorySegment memory, AccessFlags access);

    /**
     * Grants the peer revocable access to a registered buffer (this view's range): binds a type-2 memory
     * window to it through this connection's queue pair and hands out the window's key in
     * {@link RdmaGrant#remote()}. That key works only on this connection and dies when the grant is
     * {@linkplain RdmaGrant#revoke() revoked} or the connection ends, while the memory stays registered;
     * until then the grant holds the registration ({@link RegisteredBuffer#close()} waits for it).
     *
     * <p>The buffer must have been registered with {@link rdmaflux.verbs.AccessFlag#MW_BIND} (and
     * {@link rdmaflux.verbs.AccessFlag#LOCAL_WRITE} to grant remote write or atomics). It needs no remote
     * access of its own: {@code register(memory, AccessFlags.of(LOCAL_WRITE, MW_BIND))} gives memory the
     * peer reaches only through grants. On Soft-RoCE (Linux 6.1) a key is checked against the whole
     * registration rather than the granted range (docs/security.md).
     *
     * <p>Cancelling the Mono while the bind is still queued withdraws it; once posted, the bind goes on and
     * its grant, which nobody can revoke then, lives until the connection ends.
     *
     * @param buffer a buffer from this connection's {@link #register}
     * @param access {@link rdmaflux.verbs.AccessFlag#REMOTE_READ}, {@code REMOTE_WRITE} and/or
     *               {@code REMOTE_ATOMIC} ({@code LOCAL_WRITE}, which {@link AccessFlags#of} adds to remote
     *               write, is ignored)
     * @return the grant once the bind completed; {@link IllegalArgumentException} for a buffer of another
     *         connection, one registered without {@code MW_BIND}, or other than remote access;
     *         {@link IllegalStateException} when the registration or the connection is closed;
     *         {@link rdmaflux.verbs.RdmaUnsupportedException} when the device has no memory windows
     */
    Mono<RdmaGrant> grant(RegisteredBuffer buffer, AccessFlags access);

    /**
     * RDMA-reads the whole remote buffer into the start of {@code local}.
     *
     * @param local where the data lands (at least {@code remote.length()} bytes)
     * @param remote what to read
     * @return completes when the data is in {@code local}
     */
    Mono<Void> read(RegisteredBuffer local, RemoteBuffer remote);

    /**
     * RDMA-writes all of {@code local} to the start of the remote buffer; the peer is not notified.
     *
     * @param local the data
     * @param remote the target (at least {@code local.length()} bytes)
     * @return completes when the write completed
     */
    Mono<Void> write(RegisteredBuffer local, RemoteBuffer remote);

    /**
     * RDMA-writes, then notifies the peer: its {@link #receive()} gets an {@link RdmaMessage} with
     * {@link RdmaMessage#isWriteNotification()} and this immediate. Counts against the peer's buffers.
     *
     * @param local the data
     * @param remote the target
     * @param immediate 32 bits for the peer
     * @return completes when the write completed
     */
    Mono<Void> writeWithImmediate(RegisteredBuffer local, RemoteBuffer remote, int immediate);

    /**
     * Atomic compare-and-swap on a remote 64-bit word.
     *
     * @param remote an 8-byte aligned, 8-byte remote buffer registered with remote atomic access
     * @param expected the value to compare with
     * @param newValue the value stored if equal
     * @return the value before the operation
     */
    Mono<Long> compareAndSwap(RemoteBuffer remote, long expected, long newValue);

    /**
     * Atomic fetch-and-add on a remote 64-bit word.
     *
     * @param remote an 8-byte aligned, 8-byte remote buffer registered with remote atomic access
     * @param delta the addend
     * @return the value before the addition
     */
    Mono<Long> fetchAndAdd(RemoteBuffer remote, long delta);


    /** {@return completes when the connection is closed and its resources are freed} */
    Mono<Void> onDispose();
}
