package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.internal.rc.ConnectionLock;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.ConnectionState;
import rdmaflux.cm.MessageWriter;
import rdmaflux.cm.internal.rc.OpKind;
import rdmaflux.cm.internal.rc.QueueSink;
import rdmaflux.cm.internal.rc.ReceivedMessages;
import rdmaflux.cm.internal.rc.Operation;
import rdmaflux.cm.internal.rc.RcQueue;
import rdmaflux.cm.internal.rc.SendQueue;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaGrant;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaMessageFlux;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.internal.memory.Registration;
import rdmaflux.cm.internal.rc.Signals;
import rdmaflux.cm.internal.rc.StreamSend;
import rdmaflux.cm.internal.rc.StreamTarget;
import rdmaflux.cm.internal.rc.WindowGrant;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * The implementation of {@link RdmaConnection}, a facade made once the connection is established: argument
 * checks, then data work handed to the connection's {@link SendQueue} (through its {@link RcQueue}) and
 * lifecycle work to its {@link ConnectionLifecycle}. What it knows of the connection is the immutable
 * {@link Established} snapshot the lifecycle hands it; whether an operation may start is decided in one
 * place ({@link #refusal}).
 *
 * <p>Threads: any; it holds no state of its own besides {@link #disposeRequested} and a cache of the
 * QP's read depths. Signals are delivered on {@link ConnectionOptions#scheduler()}.
 */
public final class Connection implements RdmaConnection, StreamTarget {
    private final ConnectionLifecycle life;
    private final Established established;
    private final RcQueue queue;
    private final SendQueue sends;
    private final ConnectionOptions options;
    /** Set by {@link #dispose()} on any thread, so sends after it fail at once. */
    private volatile boolean disposeRequested;
    /** {initiator depth, responder resources} of the QP, queried on first use. */
    private volatile int[] readDepths;
    /** Where operations' ends reach their subscribers: the options' scheduler, in batches. */
    private final Signals signals;

    /** CM loop, as the connection is established. */
    Connection(ConnectionLifecycle life, Established established, ConnectionOptions options) {
        this.life = life;
        this.established = established;
        this.queue = established.queue();
        this.sends = queue.sends();
        this.options = options;
        this.signals = new Signals(options::scheduler);
    }

    // ---------------------------------------------------------------- messaging

    /**
     * An operation, refused at once when the connection cannot take it; its end is signalled on the
     * options' scheduler ({@link Operation}).
     */
    private <T> Mono<T> submit(OpKind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a,
                               long b) {
        if (refusing()) {
            return Mono.error(refusal(kind.name().toLowerCase(Locale.ROOT)));
        }
        return new Operation<>(sends, signals, kind, data, local, remote, a, b);
    }

    /** {@return whether operations are refused from now on: after {@code dispose()}, or once it is closing} */
    private boolean refusing() {
        return disposeRequested || sends.closedForSends();
    }

    /**
     * Why an operation cannot start ({@link #refusing()}): after {@code dispose()}, or on a connection closed
     * in order, an {@link IllegalStateException}; on one that failed (the peer went away, broke the protocol,
     * a work request failed), that failure, as its pending operations got.
     *
     * @param what the operation, for the message
     */
    private RuntimeException refusal(String what) {
        Throwable f = disposeRequested ? null : life.failure();
        if (f instanceof RuntimeException failure) {
            return failure;
        }
        return new IllegalStateException("the connection is closed; cannot " + what, f);
    }

    @Override
    public Mono<Void> send(ByteBuffer message) {
        int len = message.remaining();
        if (len > eagerMessageSize()) {
            if (!queue.largeMessages()) {
                return Mono.error(tooLarge(len));
            }
            return submit(OpKind.LARGE, message, null, null, 0, 0);
        }
        return submit(OpKind.SEND, message, null, null, 0, 0);
    }

    /**
     * One message of {@link #send(Publisher)}: queued or posted with {@code sink}, which is told when it
     * completed or why it cannot be sent; without bytes, the sink writes them itself ({@link QueueSink.Written}).
     * Any thread.
     */
    @Override
    public void sendElement(ByteBuffer message, MonoSink<Object> sink) {
        if (refusing()) {
            sink.error(refusal("send"));
            return;
        }
        int len = message != null ? message.remaining() : ((QueueSink.Written) sink).length();
        if (len > eagerMessageSize() && !queue.largeMessages()) {
            sink.error(tooLarge(len));
            return;
        }
        sends.enqueue(len > eagerMessageSize() ? OpKind.LARGE : OpKind.SEND, message, null, null, 0, 0, null, sink);
    }

    /**
     * {@return the lock the send queue takes for each message} A stream that holds it (it is reentrant)
     * across several {@link #sendElement} calls has them posted together when it lets go.
     */
    @Override
    public ConnectionLock sendLock() {
        return queue.lock;
    }

    private IllegalArgumentException tooLarge(int len) {
        return new IllegalArgumentException("message of " + len + " bytes exceeds the largest the "
                + "peer accepts (" + eagerMessageSize() + " bytes, its receive buffer size): "
                + "the peer does not speak large messages (RAW protocol, or an rdmaflux before 0.2)");
    }

    @Override
    public Mono<Void> send(RegisteredBuffer message) {
        RuntimeException unusable = unusable(message);
        if (unusable != null) {
            return Mono.error(unusable);
        }
        Registration.View v = (Registration.View) message;
        long len = message.length();
        if (len > maxMessageSize()) {
            return Mono.error(new IllegalArgumentException("message of " + len + " bytes exceeds the largest the "
                    + "peer accepts (" + maxMessageSize() + " bytes)"));
        }
        OpKind kind = len > eagerMessageSize() ? OpKind.LARGE : OpKind.SEND;
        return submit(kind, null, v, null, 0, 0);
    }

    @Override
    public Mono<Void> send(MemorySegment message) {
        if (message.byteSize() > Integer.MAX_VALUE) {
            return Mono.error(new IllegalArgumentException("a message is at most 2^31-1 bytes, got "
                    + message.byteSize()));
        }
        return send(message.asByteBuffer());
    }

    @Override
    public Mono<Void> send(Publisher<? extends ByteBuffer> messages) {
        return new StreamSend<ByteBuffer>(this, messages, Function.identity(), null, options.sendBuffers(),
                options.scheduler());
    }

    @Override
    public <T> Mono<Void> send(Publisher<T> messages, Function<? super T, ? extends ByteBuffer> content,
                               Consumer<? super T> release) {
        Objects.requireNonNull(content, "content");
        Objects.requireNonNull(release, "release");
        return new StreamSend<>(this, messages, content, release, options.sendBuffers(), options.scheduler());
    }

    @Override
    public <T> Mono<Void> send(Publisher<T> messages, MessageWriter<? super T> writer, Consumer<? super T> release) {
        Objects.requireNonNull(writer, "writer");
        Objects.requireNonNull(release, "release");
        return new StreamSend<>(this, messages, writer, release, options.sendBuffers(), options.scheduler());
    }

    @Override
    public RdmaMessageFlux receive() {
        Flux<RdmaMessage> in = Flux.defer(queue::inbound);
        // Signals on the thread that emits them need no hop: the inbound sink's own queue already holds what
        // a subscriber without demand cannot take, and a publishOn there would add a second queue and drain
        // loop to every message on the completion loop (busy polling's latency).
        Scheduler s = options.scheduler();
        Flux<RdmaMessage> out = s == Schedulers.immediate() ? in : in.publishOn(s, options.receiveBuffers());
        // A message taken from the connection that never reaches the subscriber (queued when it cancels, as
        // take(n) and an error in an operator do) would keep its buffer and its credit for the connection's
        // life: released here. Only what is queued upstream of this point is discarded, never a message the
        // subscriber got, so this cannot release a message twice.
        return new ReceivedMessages(out.doOnDiscard(RdmaMessage.class, RdmaMessage::release),
                localAddress() + " -> " + remoteAddress());
    }

    @Override
    public Flux<byte[]> receiveBytes() {
        return receive().asByteArray();
    }

    // ---------------------------------------------------------------- one-sided

    @Override
    public RegisteredBuffer register(MemorySegment memory, AccessFlags access) {
        if (refusing()) {
            RuntimeException refused = refusal("register");
            // Synchronous: always IllegalStateException; a failure is its cause.
            throw refused instanceof IllegalStateException ise ? ise
                    : new IllegalStateException("the connection failed; cannot register", refused);
        }
        return queue.register(memory, access);
    }

    /**
     * Why {@code buffer} cannot be used on this connection, or {@code null}. A buffer registered through
     * any connection of the same {@link RdmaLoops} and device is in this connection's protection domain
     * (the loops keep one per device) and so is usable here; one of other loops or another device is not,
     * and the device would fail the work request (a protection error) and with it the connection.
     */
    private RuntimeException unusable(RegisteredBuffer buffer) {
        RcQueue q = queue;
        if (!(buffer instanceof Registration.View v)) {
            return new IllegalArgumentException("the buffer must come from an RdmaConnection's register()");
        }
        if (v.owner().region().protectionDomain() != q.pd) {
            return new IllegalArgumentException("the buffer was registered in another protection domain: a "
                    + "registered buffer works on the connections of the RdmaLoops and device it was registered "
                    + "through (" + v.owner().region().protectionDomain() + "), not on this one (" + q.pd + ")");
        }
        if (v.isClosed()) {
            // Registrations made through a connection close with it: on a connection that ended, why it ended
            // (typed, as its pending operations were told), not the closed buffer it left behind.
            return refusing() ? refusal("use a registered buffer") : new IllegalStateException(
                    "the registered buffer was closed");
        }
        return null;
    }

    private Mono<Void> oneSided(OpKind kind, RegisteredBuffer local, RemoteBuffer remote, long imm) {
        RuntimeException unusable = unusable(local);
        if (unusable != null) {
            return Mono.error(unusable);
        }
        long len = kind == OpKind.READ ? remote.length() : local.length();
        if (len > local.length() || len > remote.length() || len > Integer.MAX_VALUE) {
            return Mono.error(new IllegalArgumentException("lengths do not fit: local " + local.length()
                    + ", remote " + remote.length()));
        }
        return submit(kind, null, local, remote, imm, 0);
    }

    @Override
    public Mono<Void> read(RegisteredBuffer local, RemoteBuffer remote) {
        return oneSided(OpKind.READ, local, remote, 0);
    }

    @Override
    public Mono<Void> write(RegisteredBuffer local, RemoteBuffer remote) {
        return oneSided(OpKind.WRITE, local, remote, 0);
    }

    @Override
    public Mono<Void> writeWithImmediate(RegisteredBuffer local, RemoteBuffer remote, int immediate) {
        return oneSided(OpKind.WRITE_IMM, local, remote, immediate);
    }

    @Override
    public Mono<RdmaGrant> grant(RegisteredBuffer buffer, AccessFlags access) {
        RuntimeException unusable = unusable(buffer);
        if (unusable == null && refusing()) {
            unusable = refusal("grant");
        }
        if (unusable != null) {
            return Mono.error(unusable);
        }
        return WindowGrant.grant(queue.grants, queue.pd, sends, (Registration.View) buffer, access,
                life.onDispose(), options.scheduler()).publishOn(options.scheduler());
    }

    private Mono<Long> atomic(OpKind kind, RemoteBuffer remote, long a, long b) {
        if (remote.length() < 8 || (remote.address() & 7) != 0) {
            return Mono.error(new IllegalArgumentException("atomics need an 8-byte aligned remote word: " + remote));
        }
        return submit(kind, null, null, remote, a, b);
    }

    @Override
    public Mono<Long> compareAndSwap(RemoteBuffer remote, long expected, long newValue) {
        return atomic(OpKind.CAS, remote, expected, newValue);
    }

    @Override
    public Mono<Long> fetchAndAdd(RemoteBuffer remote, long delta) {
        return atomic(OpKind.FAA, remote, delta, 0);
    }

    // ---------------------------------------------------------------- the rest of the API

    @Override
    public InetSocketAddress localAddress() {
        return established.local();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return established.remote();
    }

    @Override
    public byte[] peerPrivateData() {
        return established.peerData().clone();
    }

    @Override
    public int maxMessageSize() {
        return queue.largeMessages() ? Integer.MAX_VALUE : eagerMessageSize();
    }

    @Override
    public int eagerMessageSize() {
        return Math.min(options.bufferSize(), established.peerBufferSize());
    }

    @Override
    public int initiatorDepth() {
        return readDepths()[0];
    }

    @Override
    public int responderResources() {
        return readDepths()[1];
    }

    private int[] readDepths() {
        int[] d = readDepths;
        if (d == null) {
            if (sends.closedForSends()) {
                throw new IllegalStateException("the connection is closed");
            }
            d = queue.queuePair().readAtomicDepths();
            readDepths = d;
        }
        return d;
    }

    /** {@return the QP's attributes (tests check what the options set natively)} */
    public rdmaflux.verbs.QpAttributes queuePairAttributes() {
        return queue.queuePair().query();
    }

    @Override
    public Flux<ConnectionState> states() {
        return life.states().publishOn(options.scheduler());
    }

    @Override
    public void dispose() {
        // Refuse new operations now, not when the CM loop gets to the close: a send issued after
        // dispose() returned must fail, whatever the loop is busy with.
        disposeRequested = true;
        life.dispose();
    }

    @Override
    public boolean isDisposed() {
        return life.isDisposed();
    }

    @Override
    public void disposeNow(Duration timeout) {
        dispose();
        onDispose().block(timeout);
    }

    @Override
    public Mono<Void> onDispose() {
        return life.onDispose().publishOn(options.scheduler());
    }

    @Override
    public String toString() {
        return "RdmaConnection[" + established.role().name().toLowerCase(Locale.ROOT) + " " + established.remote()
                + ", " + life.state() + "]";
    }
}
