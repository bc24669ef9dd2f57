package rdmaflux.cm;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.function.IntFunction;

import reactor.core.scheduler.Scheduler;

/**
 * Immutable options of a connection (client or server side): start from {@link #defaults()} or
 * {@link #builder()}, derive with {@link #toBuilder()}. Each accessor says what its option does and its
 * default; each setter of the {@link Builder}, which values it allows.
 *
 * <pre>{@code
 * ConnectionOptions options = ConnectionOptions.builder().bufferSize(64 * 1024).timeout(Step.CONNECT,
 *         Duration.ofSeconds(2)).build();
 * ConnectionOptions raw = options.toBuilder().protocol(ConnectionOptions.Protocol.RAW).build();
 * }</pre>
 *
 * <p>Threads: any; immutable.
 */
public final class ConnectionOptions extends QueuePairOptions {

    /** How the two sides talk. */
    public enum Protocol {
        /**
         * rdmaflux on both ends: credit-based flow control, messages up to the peer's buffer size,
         * orderly close. The default.
         */
        CREDITS,
        /**
         * Plain verbs SENDs without a header or credits, for peers that are not rdmaflux (rping, ...).
         * The application must not outrun the peer's posted receives (the RNR retry covers short bursts).
         */
        RAW
    }

    /** What an established connection does when its device's port goes down ({@code IBV_EVENT_PORT_ERR}). */
    public enum PortDownPolicy {
        /**
         * Nothing special: the transport keeps retrying, so a port that comes back within the retry time
         * ({@link ConnectionOptions#ackTimeout() ConnectionOptions.ackTimeout()}) loses nothing, and one that
         * does not fails the connection with {@code RETRY_EXC_ERR} once something is sent. The default.
         */
        WAIT,
        /**
         * Fail at once with {@link RdmaCmException.PortDown}: for applications that would rather fail over
         * to another path than wait. The connection watches its device's asynchronous events (one
         * {@code rdmaflux-device-events-<device>} thread per device and loops, while such connections exist).
         */
        FAIL
    }

    /** How completions are waited for. */
    public enum CompletionMode {
        /** Arm the CQ and sleep in poll(2) on its channel: no CPU when idle. The default. */
        EVENT_DRIVEN,
        /**
         * Spin on the CQ for {@link ConnectionOptions#busyPoll() ConnectionOptions.busyPoll()} before arming: lower
         * latency, one core busy while traffic flows.
         */
        BUSY_POLL
    }

    /**
     * Receive buffers the {@link Protocol#CREDITS} protocol posts beyond {@link #receiveBuffers()} for
     * its control messages (credit updates and the orderly close), which take no credit.
     */
    public static final int CONTROL_RECEIVE_BUFFERS = 3;

    /**
     * For {@link Builder#initiatorDepth Builder.initiatorDepth} and
     * {@link Builder#responderResources Builder.responderResources}: as many as the device allows (and, when
     * accepting, as the peer asked for). The default.
     */
    public static final int DEVICE_MAXIMUM = -1;

    /**
     * For {@link Builder#ackTimeout Builder.ackTimeout} and {@link Builder#typeOfService Builder.typeOfService}:
     * leave the device's default.
     */
    public static final int DEVICE_DEFAULT = -1;

    /** The bytes of the private data the CREDITS hello takes (the RC data path's {@code Wire.HEADER}). */
    static final int CREDITS_HEADER = 12;
    /** Receive buffers per connection at most: credits are counted in 15 bits. */
    private static final int MAX_RECEIVE_BUFFERS = 0x7FFF;

    private static final ConnectionOptions DEFAULTS = new Builder().build();

    private final int receiveBuffers;
    private final int sendBuffers;
    private final int bufferSize;
    private final Protocol protocol;
    private final Duration keepalive;
    private final long largeMessageBudget;
    private final int maxInboundMessageSize;
    private final IntFunction<MemorySegment> largeMessageMemory;
    private final PortDownPolicy portDownPolicy;
    private final Scheduler scheduler;
    private final RdmaRecorder recorder;
    private final RdmaLoops loops;
    private final boolean recycledMessages;

    private ConnectionOptions(Builder b) {
        super(b);
        receiveBuffers = b.receiveBuffers;
        sendBuffers = b.sendBuffers;
        bufferSize = b.bufferSize;
        protocol = b.protocol;
        keepalive = b.keepalive;
        largeMessageBudget = b.largeMessageBudget;
        maxInboundMessageSize = b.maxInboundMessageSize;
        largeMessageMemory = b.largeMessageMemory;
        portDownPolicy = b.portDownPolicy;
        scheduler = b.scheduler;
        recorder = b.recorder;
        loops = b.loops;
        recycledMessages = b.recycledMessages;
    }

    /** {@return the default options} */
    public static ConnectionOptions defaults() {
        return DEFAULTS;
    }

    /** {@return a builder starting from the defaults} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder starting from these options} */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** {@return receive buffers posted per connection: the credits granted to the peer; 32 by default} */
    public int receiveBuffers() {
        return receiveBuffers;
    }

    /** {@return registered send buffers per connection: sends in flight; 32 by default} */
    public int sendBuffers() {
        return sendBuffers;
    }

    /**
     * {@return the size of each send and receive buffer, the largest message sent without RDMA READ; 8 KiB by
     * default}
     */
    public int bufferSize() {
        return bufferSize;
    }

    /** {@return how the two sides talk; {@link Protocol#CREDITS} by default} */
    public Protocol protocol() {
        return protocol;
    }

    /**
     * {@return how long a connection may see no traffic before it probes its peer; zero when off; 4 s by default}
     *
     * <p>With the {@link Protocol#CREDITS} protocol, a connection on which nothing completed for this long
     * sends a zero-length control message (it carries no credit and the peer only reposts its buffer).
     * Like every RC send it must be acknowledged: when the peer's host is gone, its transport retries run
     * out ({@link #ackTimeout()}) and the connection fails with {@link RdmaCmException.CompletionError}
     * ({@code RETRY_EXC_ERR}). So a dead peer is noticed within 1.5 x this duration plus the retry time even
     * on an idle connection. {@link Protocol#RAW} sends nothing the peer did not ask for, so it has no keepalive.
     */
    public Duration keepalive() {
        return keepalive;
    }

    /**
     * {@return the bytes of large messages one connection keeps in flight on each side; 64 MiB by default}
     *
     * <p>A message larger than {@link #bufferSize()} travels by RDMA READ out of a registered copy on the
     * sender into a region the receiver registered for it. The sender copies only while its copies not
     * yet read fit this budget, and the receiver reads only while the large messages it holds (being read,
     * or delivered and not yet released) fit it; a single larger message goes alone.
     */
    public long largeMessageBudget() {
        return largeMessageBudget;
    }

    /**
     * {@return the largest message this side accepts from its peer, in bytes; 2^31-1 (no limit beyond the
     * protocol's) by default}
     *
     * <p>A peer announcing a larger one (in a large message's descriptor) fails the connection with
     * {@link RdmaCmException.ProtocolViolation} before anything is allocated for it, as gRPC's
     * {@code maxInboundMessageSize} or Netty's frame-length limits do. Messages up to the receive
     * {@link #bufferSize()} are always accepted: they land in the posted buffers. A server facing untrusted
     * peers should set what its application needs, since one large message may exceed
     * {@link #largeMessageBudget()} and is allocated whole.
     */
    public int maxInboundMessageSize() {
        return maxInboundMessageSize;
    }

    /**
     * {@return where large messages land, or {@code null} (the default) for memory rdmaflux allocates}
     *
     * <p>Given a large message's size, the function returns off-heap memory of at least that size; the
     * message is read straight into it and {@link RdmaMessage#data()} is a view of it. It runs on
     * Reactor's {@code boundedElastic} scheduler, one call per large message. rdmaflux registers the
     * memory for the read and deregisters it when the message is released; the memory stays the
     * application's, to reuse or free after the release. A function that throws or returns heap or too
     * little memory fails the connection.
     */
    public IntFunction<MemorySegment> largeMessageMemory() {
        return largeMessageMemory;
    }

    /** {@return what an established connection does when its port goes down; {@link PortDownPolicy#WAIT} by default} */
    public PortDownPolicy portDownPolicy() {
        return portDownPolicy;
    }

    /**
     * {@return where user-visible signals are delivered: the scheduler set, else (the default) the
     * {@linkplain RdmaLoops#scheduler() signal threads} of {@link #loops()}, as they are at each use (without
     * making the shared loops, so without rdma-core)}
     *
     * <p>Once loops of your own are disposed and their threads ended, the default is
     * {@code Schedulers.immediate()}: what is still signalled then (an operation refused because the loops
     * are disposed, an {@code onDispose()} subscribed late) is signalled on the thread that produced it.
     *
     * <p>The default's hop from the completion loop allocates nothing per message; a Reactor scheduler's
     * makes a task per hop, shared by the messages the hop delivers at once (docs/benchmarks.md: about 10
     * bytes per message of a SEND stream, with a single-thread scheduler).
     */
    public Scheduler scheduler() {
        Scheduler s = scheduler;
        return s != null ? s : LoopsImplementation.defaultScheduler(loops);
    }

    /** {@return the metrics recorder; {@link RdmaRecorder#NOOP} by default} */
    public RdmaRecorder recorder() {
        return recorder;
    }

    /**
     * {@return the loops connections and servers made with these options run on: the configured ones, or
     * (the default) {@link RdmaLoops#shared()}, created on first use}
     */
    public RdmaLoops loops() {
        return loops != null ? loops : RdmaLoops.shared();
    }

    /**
     * {@return whether received messages are recycled; {@code true} by default}
     *
     * <p>Recycled, each message {@code receive()} emits is its receive buffer's own object, emitted again
     * for every message that lands in that buffer, as Netty recycles its pooled buffers: receiving and
     * releasing allocate nothing. A released message whose buffer holds no newer message throws on use, and
     * a second release is ignored. Once its buffer took a newer message, a reference kept past
     * {@link RdmaMessage#release()} is that newer message: using it reads the newer message, and releasing
     * it again hands that message's buffer back under its reader. Release each message exactly once and
     * drop it then.
     *
     * <p>{@code false} buys a safety net for 24 bytes per message (on a 64-bit JVM with compressed
     * references): each message is an object of its own, so a reference kept past {@code release()} keeps
     * failing after its buffer took a newer message, and a late second release is ignored. Turn recycling
     * off while hunting a use after release; {@link RdmaLeakDetection.Level#PARANOID} (for tests) does the same
     * for every message, and reports the messages never released. Recycling stays the default because the
     * safety net is there where it is cheap: in test suites run at that level, and for the messages that the
     * default sampled leak detection tracks.
     *
     * <p>Applies to the messages of receive buffers (a connection's own, or a shared pool's); a large
     * message (docs/protocol.md) is an object of its own either way.
     */
    public boolean recycledMessages() {
        return recycledMessages;
    }

    @Override
    public String toString() {
        return "ConnectionOptions[" + queuePairToString() + ", receiveBuffers=" + receiveBuffers + ", sendBuffers="
                + sendBuffers + ", bufferSize=" + bufferSize + ", protocol=" + protocol + ", keepalive=" + keepalive
                + ", largeMessageBudget=" + largeMessageBudget + ", maxInboundMessageSize=" + maxInboundMessageSize
                + ", largeMessageMemory=" + largeMessageMemory
                + ", portDownPolicy=" + portDownPolicy + ", scheduler=" + scheduler + ", recorder=" + recorder
                + ", loops=" + loops + ", recycledMessages=" + recycledMessages + "]";
    }

    /**
     * Builds {@link ConnectionOptions}. Each setter checks its value at once: a value it does not allow
     * throws {@link IllegalArgumentException} (a null it does not allow, {@link NullPointerException}), whose
     * message names the option and what it allows. {@link #build()} checks what depends on several options:
     * the private data against the protocol's room.
     *
     * <p>Threads: one at a time; not thread-safe.
     */
    public static final class Builder extends QueuePairOptions.Builder {
        private int receiveBuffers = 32;
        private int sendBuffers = 32;
        private int bufferSize = 8192;
        private Protocol protocol = Protocol.CREDITS;
        private Duration keepalive = Duration.ofSeconds(4);
        private long largeMessageBudget = 64L << 20;
        private int maxInboundMessageSize = Integer.MAX_VALUE;
        private IntFunction<MemorySegment> largeMessageMemory;
        private PortDownPolicy portDownPolicy = PortDownPolicy.WAIT;
        /** Null: the loops' signal threads, looked up at each use ({@link ConnectionOptions#scheduler()}). */
        private Scheduler scheduler;
        private RdmaRecorder recorder = RdmaRecorder.NOOP;
        private RdmaLoops loops;
        private boolean recycledMessages = true;

        private Builder() {
        }

        private Builder(ConnectionOptions o) {
            super(o);
            receiveBuffers = o.receiveBuffers;
            sendBuffers = o.sendBuffers;
            bufferSize = o.bufferSize;
            protocol = o.protocol;
            keepalive = o.keepalive;
            largeMessageBudget = o.largeMessageBudget;
            maxInboundMessageSize = o.maxInboundMessageSize;
            largeMessageMemory = o.largeMessageMemory;
            portDownPolicy = o.portDownPolicy;
            scheduler = o.scheduler;
            recorder = o.recorder;
            loops = o.loops;
            recycledMessages = o.recycledMessages;
        }

        /**
         * Sets {@link ConnectionOptions#receiveBuffers()}.
         *
         * @param n 1..32767
         * @return this
         */
        public Builder receiveBuffers(int n) {
            receiveBuffers = OptionChecks.range("receiveBuffers", n, 1, MAX_RECEIVE_BUFFERS);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#sendBuffers()}.
         *
         * @param n at least 1
         * @return this
         */
        public Builder sendBuffers(int n) {
            sendBuffers = OptionChecks.atLeast("sendBuffers", n, 1);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#bufferSize()}.
         *
         * @param bytes at least 1
         * @return this
         */
        public Builder bufferSize(int bytes) {
            bufferSize = OptionChecks.atLeast("bufferSize", bytes, 1);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#protocol()}.
         *
         * @param p not null
         * @return this
         */
        public Builder protocol(Protocol p) {
            protocol = OptionChecks.notNull("protocol", p);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#keepalive()}.
         *
         * @param idle zero (off) or positive
         * @return this
         */
        public Builder keepalive(Duration idle) {
            keepalive = OptionChecks.notNegative("keepalive", idle, "off");
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#largeMessageBudget()}.
         *
         * @param bytes at least 1
         * @return this
         */
        public Builder largeMessageBudget(long bytes) {
            largeMessageBudget = OptionChecks.atLeast("largeMessageBudget", bytes, 1L);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#maxInboundMessageSize()}.
         *
         * @param bytes at least 1
         * @return this
         */
        public Builder maxInboundMessageSize(int bytes) {
            maxInboundMessageSize = OptionChecks.atLeast("maxInboundMessageSize", bytes, 1);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#largeMessageMemory()}.
         *
         * @param allocator off-heap memory of at least the size given, or {@code null} for rdmaflux's own
         * @return this
         */
        public Builder largeMessageMemory(IntFunction<MemorySegment> allocator) {
            largeMessageMemory = allocator;
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#portDownPolicy()}.
         *
         * @param policy not null
         * @return this
         */
        public Builder portDownPolicy(PortDownPolicy policy) {
            portDownPolicy = OptionChecks.notNull("portDownPolicy", policy);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#scheduler()}.
         *
         * @param s not null (leave it unset for the loops' signal threads)
         * @return this
         */
        public Builder scheduler(Scheduler s) {
            scheduler = OptionChecks.notNull("scheduler", s);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#recorder()}.
         *
         * @param r not null ({@link RdmaRecorder#NOOP} for none)
         * @return this
         */
        public Builder recorder(RdmaRecorder r) {
            recorder = OptionChecks.notNull("recorder", r);
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#loops()}.
         *
         * @param l the loops to run on, or {@code null} for {@link RdmaLoops#shared()}
         * @return this
         */
        public Builder loops(RdmaLoops l) {
            loops = l;
            return this;
        }

        /**
         * Sets {@link ConnectionOptions#recycledMessages()}.
         *
         * @param recycled whether received messages are the receive buffers' own, reused objects
         * @return this
         */
        public Builder recycledMessages(boolean recycled) {
            recycledMessages = recycled;
            return this;
        }

        /**
         * {@return the options}
         *
         * @throws IllegalArgumentException when the private data does not fit the protocol
         */
        public ConnectionOptions build() {
            int room = MAX_CONNECT_PRIVATE_DATA - (protocol == Protocol.CREDITS ? CREDITS_HEADER : 0);
            if (privateDataLength() > room) {
                throw new IllegalArgumentException("privateData must be at most " + room + " bytes with the "
                        + protocol + " protocol, got " + privateDataLength());
            }
            return new ConnectionOptions(this);
        }
    }
}
