package rdmaflux.cm;


import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

import reactor.core.scheduler.Scheduler;

/**
 * Immutable options of a connection (client or server side); start from {@link #defaults()} and
 * derive with the {@code with...} methods or {@link #toBuilder()}.
 *
 * <p>Defaults: 32 receive buffers and 32 send buffers of 8 KiB, send queue depth 128, 64 bytes of
 * inline data, per-step timeouts of 2 s (address, route), 10 s (connect, accept) and 3 s
 * (disconnect), retry count 6 and ACK timeout 17 (0.54 s: a silent peer fails sends within 3.8 s),
 * RNR retry 7 (forever), event-driven completions, the credit protocol, recycled received messages,
 * user code on the loops' {@linkplain RdmaLoops#scheduler() signal threads}; RDMA reads and atomics in flight (initiator depth and
 * responder resources) up to the device's maximum, the device's type of service, and a keepalive probe
 * after 4 s without traffic (credit protocol).
 */
public final class ConnectionOptions {

    /** The CM's limit on a REQ's private data (the RC data path's {@code Wire.MAX_CONNECT_PRIVATE_DATA}). */
    static final int MAX_CONNECT_PRIVATE_DATA = 56;
    /** The bytes of it the CREDITS hello takes (the RC data path's {@code Wire.HEADER}). */
    static final int CREDITS_HEADER = 12;

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
         * ({@link ConnectionOptions#ackTimeout()} x ({@link ConnectionOptions#retryCount()} + 1)) loses nothing, and one that does not fails
         * the connection with {@code RETRY_EXC_ERR} once something is sent. The default.
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
        /** Arm the CQ and sleep in poll(2) on its channel: no CPU when idle. */
        EVENT_DRIVEN,
        /** Spin on the CQ for {@link #busyPoll()} before arming: lower latency, one core busy while traffic flows. */
        BUSY_POLL
    }

    /**
     * Receive buffers the {@link Protocol#CREDITS} protocol posts beyond {@link #receiveBuffers()} for
     * its control messages (credit updates and the orderly close), which take no credit.
     */
    public static final int CONTROL_RECEIVE_BUFFERS = 3;

    /**
     * For {@link Builder#initiatorDepth} and {@link Builder#responderResources}: as many as the device
     * allows (and, when accepting, as the peer asked for). The default.
     */
    public static final int DEVICE_MAXIMUM = -1;

    /** For {@link Builder#ackTimeout} and {@link Builder#typeOfService}: leave the device's default. */
    public static final int DEVICE_DEFAULT = -1;

    private static final ConnectionOptions DEFAULTS = new Builder().build();

    private final Map<Step, Duration> timeouts;
    private final int receiveBuffers;
    private final int sendBuffers;
    private final int bufferSize;
    private final int sendQueueDepth;
    private final int maxInlineData;
    private final int retryCount;
    private final int rnrRetryCount;
    private final int initiatorDepth;
    private final int responderResources;
    private final int ackTimeout;
    private final int typeOfService;
    private final byte[] privateData;
    private final Protocol protocol;
    private final CompletionMode completionMode;
    private final Duration busyPoll;
    private final boolean sharedCompletionQueue;
    private final Duration keepalive;
    private final long largeMessageBudget;
    private final int maxInboundMessageSize;
    private final PortDownPolicy portDownPolicy;
    private final java.util.function.IntFunction<java.lang.foreign.MemorySegment> largeMessageMemory;
    private final Scheduler scheduler;
    private final RdmaRecorder recorder;
    private final RdmaLoops loops;
    private final boolean recycledMessages;

    private ConnectionOptions(Builder b) {
        this.timeouts = Map.copyOf(b.timeouts);
        this.receiveBuffers = positive("receiveBuffers", b.receiveBuffers);
        this.sendBuffers = positive("sendBuffers", b.sendBuffers);
        this.bufferSize = positive("bufferSize", b.bufferSize);
        this.sendQueueDepth = positive("sendQueueDepth", b.sendQueueDepth);
        if (b.maxInlineData < 0 || b.retryCount < 0 || b.retryCount > 7 || b.rnrRetryCount < 0 || b.rnrRetryCount > 7) {
            throw new IllegalArgumentException("maxInlineData >= 0, retry counts 0..7");
        }
        this.maxInlineData = b.maxInlineData;
        this.retryCount = b.retryCount;
        this.rnrRetryCount = b.rnrRetryCount;
        this.initiatorDepth = readDepth("initiatorDepth", b.initiatorDepth);
        this.responderResources = readDepth("responderResources", b.responderResources);
        if (b.ackTimeout != DEVICE_DEFAULT && (b.ackTimeout < 0 || b.ackTimeout > 31)) {
            throw new IllegalArgumentException("ackTimeout is an exponent 0..31 (4.096 us x 2^n; 0 = infinite), got "
                    + b.ackTimeout);
        }
        this.ackTimeout = b.ackTimeout;
        if (b.typeOfService != DEVICE_DEFAULT && (b.typeOfService < 0 || b.typeOfService > 255)) {
            throw new IllegalArgumentException("typeOfService is a byte 0..255, got " + b.typeOfService);
        }
        this.typeOfService = b.typeOfService;
        this.privateData = b.privateData.clone();
        this.protocol = Objects.requireNonNull(b.protocol);
        this.completionMode = Objects.requireNonNull(b.completionMode);
        this.busyPoll = Objects.requireNonNull(b.busyPoll);
        this.sharedCompletionQueue = b.sharedCompletionQueue;
        if (b.keepalive.isNegative()) {
            throw new IllegalArgumentException("keepalive must be >= 0 (0 = off), got " + b.keepalive);
        }
        this.keepalive = b.keepalive;
        if (b.largeMessageBudget <= 0) {
            throw new IllegalArgumentException("largeMessageBudget must be > 0, got " + b.largeMessageBudget);
        }
        this.largeMessageBudget = b.largeMessageBudget;
        if (b.maxInboundMessageSize <= 0) {
            throw new IllegalArgumentException("maxInboundMessageSize must be > 0, got " + b.maxInboundMessageSize);
        }
        this.maxInboundMessageSize = b.maxInboundMessageSize;
        this.portDownPolicy = Objects.requireNonNull(b.portDownPolicy);
        this.largeMessageMemory = b.largeMessageMemory;
        this.scheduler = b.scheduler;
        this.recorder = Objects.requireNonNull(b.recorder);
        this.loops = b.loops;
        this.recycledMessages = b.recycledMessages;
        int room = MAX_CONNECT_PRIVATE_DATA - (protocol == Protocol.CREDITS ? CREDITS_HEADER : 0);
        if (privateData.length > room) {
            throw new IllegalArgumentException("private data is limited to " + room + " bytes with " + protocol
                    + ", got " + privateData.length);
        }
        if (receiveBuffers > 0x7FFF) {
            throw new IllegalArgumentException("at most 32767 receive buffers");
        }
    }

    private static int readDepth(String name, int v) {
        // 255 is rdma_cm's own "device maximum" marker (RDMA_MAX_INIT_DEPTH, RDMA_MAX_RESP_RES).
        if (v != DEVICE_MAXIMUM && (v < 0 || v > 254)) {
            throw new IllegalArgumentException(name + " must be 0..254 or DEVICE_MAXIMUM, got " + v);
        }
        return v;
    }

    private static int positive(String name, int v) {
        if (v <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, got " + v);
        }
        return v;
    }

    /** {@return the default options} */
    public static ConnectionOptions defaults() {
        return DEFAULTS;
    }

    /** {@return a builder starting from these options} */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /**
     * The timeout of a step.
     *
     * @param step a step
     * @return its timeout, or {@code null} for none
     */
    public Duration timeout(Step step) {
        return timeouts.get(step);
    }

    /** {@return the step timeouts, per step} */
    public Map<Step, Duration> timeouts() {
        return timeouts;
    }

    /** {@return receive buffers posted per connection (the credits granted to the peer)} */
    public int receiveBuffers() {
        return receiveBuffers;
    }

    /** {@return registered send buffers per connection (sends in flight)} */
    public int sendBuffers() {
        return sendBuffers;
    }

    /** {@return the size of each send and receive buffer: the largest message} */
    public int bufferSize() {
        return bufferSize;
    }

    /** {@return send queue depth (sends, RDMA operations and control messages in flight)} */
    public int sendQueueDepth() {
        return sendQueueDepth;
    }

    /** {@return the largest payload sent inline} */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * {@return transport retries: a send the peer does not acknowledge is sent this many times more
     * before the connection fails with {@code RETRY_EXC_ERR}}
     *
     * <p>Soft-RoCE (rxe) retries forever when this is 7, so the failure bound only holds below 7.
     */
    public int retryCount() {
        return retryCount;
    }

    /** {@return RNR retries (7 = forever)} */
    public int rnrRetryCount() {
        return rnrRetryCount;
    }

    /**
     * {@return RDMA reads and atomics this side keeps in flight, or {@link #DEVICE_MAXIMUM}; checked
     * against the device's {@code max_qp_init_rd_atom} when connecting}
     */
    public int initiatorDepth() {
        return initiatorDepth;
    }

    /**
     * {@return RDMA reads and atomics from the peer this side accepts in flight, or {@link #DEVICE_MAXIMUM};
     * checked against the device's {@code max_qp_rd_atom} when connecting}
     */
    public int responderResources() {
        return responderResources;
    }

    /**
     * {@return the local ACK timeout exponent (4.096 us x 2^n), or {@link #DEVICE_DEFAULT}}
     *
     * <p>With {@link #retryCount()}, it bounds how long a silent peer (wire cut, host gone) goes
     * unnoticed while something is being sent: 4.096 us x 2^n x (retries + 1), 3.8 s by default (Soft-RoCE
     * was measured taking up to twice that with a stream in flight). rdma_cm's own default on RoCE (kept
     * with {@link #DEVICE_DEFAULT}) is 19 on Soft-RoCE, 2.1 s per try.
     */
    public int ackTimeout() {
        return ackTimeout;
    }

    /** {@return the type of service of the client's traffic, or {@link #DEVICE_DEFAULT}} */
    public int typeOfService() {
        return typeOfService;
    }

    /** {@return a copy of the application's private data sent with connect/accept} */
    public byte[] privateData() {
        return privateData.clone();
    }

    /** {@return the protocol} */
    public Protocol protocol() {
        return protocol;
    }

    /** {@return the completion mode} */
    public CompletionMode completionMode() {
        return completionMode;
    }

    /** {@return how long to spin in {@link CompletionMode#BUSY_POLL} before sleeping} */
    public Duration busyPoll() {
        return busyPoll;
    }

    /**
     * {@return whether connections share completion queues with the other connections of their completion
     * loop on their device; {@code true} by default}
     *
     * <p>Off, each connection has a CQ of its own. On, the connections of one completion loop on one device
     * share a few CQs of up to 4,096 entries (fewer if the device's {@code max_cqe} is smaller): each
     * reserves its send queue depth plus the receives that can complete for it, so a shared CQ never
     * overflows, and a new CQ is made when none has room. The loop polls a shared CQ and hands each
     * completion to its connection by QP number; the connection handles its completions as it would from a
     * CQ of its own, in the same order. Fewer CQs for many connections: less device and kernel memory,
     * and one poll serves many connections; the cost is one copy of each completion (one {@code ibv_wc}, 48 bytes). A server's
     * accepted connections share CQs when its {@link RdmaServer#bind(java.net.InetSocketAddress,
     * ConnectionOptions, AcceptFilter, ServerOptions) connection options} say so.
     *
     * <p>Ignored in {@link CompletionMode#BUSY_POLL}: a busy-polling connection keeps a CQ of its own,
     * because spinning on a shared CQ would spin for all the connections on it.
     */
    public boolean sharedCompletionQueue() {
        return sharedCompletionQueue;
    }

    /**
     * A copy whose connections share completion queues, or not ({@link #sharedCompletionQueue()}).
     *
     * @param shared whether connections share the CQs of their completion loop on their device
     * @return new options
     */
    public ConnectionOptions withSharedCompletionQueue(boolean shared) {
        return toBuilder().sharedCompletionQueue(shared).build();
    }

    /**
     * {@return where user-visible signals are delivered: the scheduler set, else the
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
        if (s != null) {
            return s;
        }
        RdmaLoops l = loops;
        return LoopsImplementation.defaultScheduler(l);
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
     * off while hunting a use after release, as one turns on Netty's paranoid leak detection.
     *
     * <p>Applies to the messages of receive buffers (a connection's own, or a shared pool's); a large
     * message (docs/protocol.md) is an object of its own either way.
     */
    public boolean recycledMessages() {
        return recycledMessages;
    }

    /** {@return the metrics recorder} */
    public RdmaRecorder recorder() {
        return recorder;
    }

    /**
     * {@return the loops connections and servers made with these options run on: the configured ones, or
     * {@link RdmaLoops#shared()} (created on first use)}
     */
    public RdmaLoops loops() {
        return loops != null ? loops : RdmaLoops.shared();
    }

    /**
     * A copy with another timeout for a step.
     *
     * @param step a step
     * @param timeout its timeout
     * @return new options
     */
    public ConnectionOptions withTimeout(Step step, Duration timeout) {
        return toBuilder().timeout(step, timeout).build();
    }

    /**
     * A copy with other application private data.
     *
     * @param data application private data
     * @return new options
     */
    public ConnectionOptions withPrivateData(byte[] data) {
        return toBuilder().privateData(data).build();
    }

    /**
     * A copy with another protocol.
     *
     * @param protocol the protocol
     * @return new options
     */
    public ConnectionOptions withProtocol(Protocol protocol) {
        return toBuilder().protocol(protocol).build();
    }

    /**
     * {@return how long a connection may see no traffic before it probes its peer; zero when off}
     *
     * <p>With the {@link Protocol#CREDITS} protocol, a connection on which nothing completed for this long
     * sends a zero-length control message (it carries no credit and the peer only reposts its buffer).
     * Like every RC send it must be acknowledged: when the peer's host is gone, its transport retries run
     * out ({@link #ackTimeout()} x ({@link #retryCount()} + 1)) and the connection fails with
     * {@link RdmaCmException.CompletionError} ({@code RETRY_EXC_ERR}). So a dead peer is noticed within
     * 1.5 x this duration plus the retry time even on an idle connection. {@link Protocol#RAW} sends
     * nothing the peer did not ask for, so it has no keepalive.
     */
    public Duration keepalive() {
        return keepalive;
    }

    /**
     * {@return the bytes of large messages one connection keeps in flight on each side}
     *
     * <p>A message larger than {@link #bufferSize()} travels by RDMA READ out of a registered copy on the
     * sender into a region the receiver registered for it. The sender copies only while its copies not
     * yet read fit this budget, and the receiver reads only while the large messages it holds (being read,
     * or delivered and not yet released) fit it; a single larger message goes alone. 64 MiB by default.
     */
    public long largeMessageBudget() {
        return largeMessageBudget;
    }

    /**
     * {@return the largest message this side accepts from its peer, in bytes}
     *
     * <p>A peer announcing a larger one (in a large message's descriptor) fails the connection with
     * {@link RdmaCmException.ProtocolViolation} before anything is allocated for it, as gRPC's
     * {@code maxInboundMessageSize} or Netty's frame-length limits do. Messages up to the receive
     * {@link #bufferSize()} are always accepted: they land in the posted buffers. 2^31-1 by default (no
     * limit beyond the protocol's); a server facing untrusted peers should set what its application needs,
     * since one large message may exceed {@link #largeMessageBudget()} and is allocated whole.
     */
    public int maxInboundMessageSize() {
        return maxInboundMessageSize;
    }

    /**
     * {@return where large messages land, or {@code null} for memory rdmaflux allocates}
     *
     * <p>Given a large message's size, the function returns off-heap memory of at least that size; the
     * message is read straight into it and {@link RdmaMessage#data()} is a view of it. It runs on
     * Reactor's {@code boundedElastic} scheduler, one call per large message. rdmaflux registers the
     * memory for the read and deregisters it when the message is released; the memory stays the
     * application's, to reuse or free after the release. A function that throws or returns heap or too
     * little memory fails the connection.
     */
    public java.util.function.IntFunction<java.lang.foreign.MemorySegment> largeMessageMemory() {
        return largeMessageMemory;
    }

    /** {@return what an established connection does when its port goes down} */
    public PortDownPolicy portDownPolicy() {
        return portDownPolicy;
    }

    /** Mutable builder. */
    public static final class Builder {
        private final Map<Step, Duration> timeouts = new EnumMap<>(Step.class);
        private int receiveBuffers = 32;
        private int sendBuffers = 32;
        private int bufferSize = 8192;
        private int sendQueueDepth = 128;
        private int maxInlineData = 64;
        private int retryCount = 6;
        private int rnrRetryCount = 7;
        private int initiatorDepth = DEVICE_MAXIMUM;
        private int responderResources = DEVICE_MAXIMUM;
        private int ackTimeout = 17;
        private int typeOfService = DEVICE_DEFAULT;
        private byte[] privateData = new byte[0];
        private Protocol protocol = Protocol.CREDITS;
        private CompletionMode completionMode = CompletionMode.EVENT_DRIVEN;
        private Duration busyPoll = Duration.ofMillis(1);
        private boolean sharedCompletionQueue = true;
        private Duration keepalive = Duration.ofSeconds(4);
        private long largeMessageBudget = 64L << 20;
        private int maxInboundMessageSize = Integer.MAX_VALUE;
        private PortDownPolicy portDownPolicy = PortDownPolicy.WAIT;
        private java.util.function.IntFunction<java.lang.foreign.MemorySegment> largeMessageMemory;
        /** Null: the loops' signal threads, looked up at each use ({@link ConnectionOptions#scheduler()}). */
        private Scheduler scheduler;
        private RdmaRecorder recorder = RdmaRecorder.NOOP;
        private RdmaLoops loops;
        private boolean recycledMessages = true;

        Builder() {
            timeouts.put(Step.ADDRESS, Duration.ofSeconds(2));
            timeouts.put(Step.ROUTE, Duration.ofSeconds(2));
            timeouts.put(Step.CONNECT, Duration.ofSeconds(10));
            timeouts.put(Step.ACCEPT, Duration.ofSeconds(10));
            timeouts.put(Step.DISCONNECT, Duration.ofSeconds(3));
        }

        Builder(ConnectionOptions o) {
            timeouts.putAll(o.timeouts);
            receiveBuffers = o.receiveBuffers;
            sendBuffers = o.sendBuffers;
            bufferSize = o.bufferSize;
            sendQueueDepth = o.sendQueueDepth;
            maxInlineData = o.maxInlineData;
            retryCount = o.retryCount;
            rnrRetryCount = o.rnrRetryCount;
            initiatorDepth = o.initiatorDepth;
            responderResources = o.responderResources;
            ackTimeout = o.ackTimeout;
            typeOfService = o.typeOfService;
            privateData = o.privateData;
            protocol = o.protocol;
            completionMode = o.completionMode;
            busyPoll = o.busyPoll;
            sharedCompletionQueue = o.sharedCompletionQueue;
            keepalive = o.keepalive;
            largeMessageBudget = o.largeMessageBudget;
            maxInboundMessageSize = o.maxInboundMessageSize;
            portDownPolicy = o.portDownPolicy;
            largeMessageMemory = o.largeMessageMemory;
            scheduler = o.scheduler;
            recorder = o.recorder;
            loops = o.loops;
            recycledMessages = o.recycledMessages;
        }

        /**
         * Sets the timeout of a step.
         *
         * @param step the step
         * @param timeout its timeout (positive)
         * @return this
         */
        public Builder timeout(Step step, Duration timeout) {
            if (step == Step.TRANSFER) {
                throw new IllegalArgumentException("an established connection has no timeout");
            }
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeouts must be positive: " + timeout);
            }
            timeouts.put(step, timeout);
            return this;
        }

        /**
         * Sets the receive buffers per connection (the credits granted).
         *
         * @param n receive buffers (credits granted)
         * @return this
         */
        public Builder receiveBuffers(int n) {
            receiveBuffers = n;
            return this;
        }

        /**
         * Sets the registered send buffers per connection.
         *
         * @param n send buffers
         * @return this
         */
        public Builder sendBuffers(int n) {
            sendBuffers = n;
            return this;
        }

        /**
         * Sets the size of each buffer, the largest message.
         *
         * @param bytes buffer size, the largest message
         * @return this
         */
        public Builder bufferSize(int bytes) {
            bufferSize = bytes;
            return this;
        }

        /**
         * Sets the send queue depth.
         *
         * @param depth send queue depth
         * @return this
         */
        public Builder sendQueueDepth(int depth) {
            sendQueueDepth = depth;
            return this;
        }

        /**
         * Sets the largest payload sent inline.
         *
         * @param bytes largest inline payload
         * @return this
         */
        public Builder maxInlineData(int bytes) {
            maxInlineData = bytes;
            return this;
        }

        /**
         * Sets the transport retries.
         *
         * @param n transport retries 0..7 (7: forever on Soft-RoCE)
         * @return this
         */
        public Builder retryCount(int n) {
            retryCount = n;
            return this;
        }

        /**
         * Sets the RNR retries.
         *
         * @param n RNR retries 0..7 (7 = forever)
         * @return this
         */
        public Builder rnrRetryCount(int n) {
            rnrRetryCount = n;
            return this;
        }

        /**
         * RDMA reads and atomics this side keeps in flight: 0..254 (at most the device's {@code
         * max_qp_init_rd_atom}, else connecting fails), or {@link #DEVICE_MAXIMUM}.
         *
         * @param n RDMA reads and atomics this side keeps in flight: 0..254 (at most the device's
         *          {@code max_qp_init_rd_atom}, else connecting fails), or {@link #DEVICE_MAXIMUM}
         * @return this
         */
        public Builder initiatorDepth(int n) {
            initiatorDepth = n;
            return this;
        }

        /**
         * RDMA reads and atomics from the peer this side accepts in flight: 0..254 (at most the
         * device's {@code max_qp_rd_atom}, else connecting fails), or {@link #DEVICE_MAXIMUM}.
         *
         * @param n RDMA reads and atomics from the peer this side accepts in flight: 0..254 (at most the
         *          device's {@code max_qp_rd_atom}, else connecting fails), or {@link #DEVICE_MAXIMUM}
         * @return this
         */
        public Builder responderResources(int n) {
            responderResources = n;
            return this;
        }

        /**
         * The local ACK timeout, 4.096 us x 2<sup>exponent</sup> (0..31, 0 = infinite), or {@link
         * #DEVICE_DEFAULT}.
         *
         * @param exponent the local ACK timeout, 4.096 us x 2<sup>exponent</sup> (0..31, 0 = infinite),
         *                 or {@link #DEVICE_DEFAULT}
         * @return this
         */
        public Builder ackTimeout(int exponent) {
            ackTimeout = exponent;
            return this;
        }

        /**
         * The type of service byte of the connection's traffic (set by the client before route
         * resolution; a server's connections follow the client's request), or {@link
         * #DEVICE_DEFAULT}.
         *
         * @param tos the type of service byte of the connection's traffic (set by the client before
         *            route resolution; a server's connections follow the client's request), or
         *            {@link #DEVICE_DEFAULT}
         * @return this
         */
        public Builder typeOfService(int tos) {
            typeOfService = tos;
            return this;
        }

        /**
         * Sets the application private data sent with connect/accept.
         *
         * @param data application private data
         * @return this
         */
        public Builder privateData(byte[] data) {
            privateData = data.clone();
            return this;
        }

        /**
         * Sets the protocol.
         *
         * @param p the protocol
         * @return this
         */
        public Builder protocol(Protocol p) {
            protocol = p;
            return this;
        }

        /**
         * Sets how completions are waited for.
         *
         * @param mode event-driven or busy-poll
         * @return this
         */
        public Builder completionMode(CompletionMode mode) {
            completionMode = mode;
            return this;
        }

        /**
         * Switches to busy polling, spinning this long before sleeping.
         *
         * @param spin how long to spin before sleeping (BUSY_POLL)
         * @return this
         */
        public Builder busyPoll(Duration spin) {
            busyPoll = spin;
            completionMode = CompletionMode.BUSY_POLL;
            return this;
        }

        /**
         * Sets whether connections share the completion queues of their completion loop on their device
         * ({@link ConnectionOptions#sharedCompletionQueue()}); ignored in {@link CompletionMode#BUSY_POLL}.
         *
         * @param shared whether to share
         * @return this
         */
        public Builder sharedCompletionQueue(boolean shared) {
            sharedCompletionQueue = shared;
            return this;
        }

        /**
         * Sets how long a connection may be idle before it probes its peer ({@link ConnectionOptions#keepalive()}).
         *
         * @param idle the idle time before a probe; {@link Duration#ZERO} turns keepalive off
         * @return this
         */
        public Builder keepalive(Duration idle) {
            keepalive = Objects.requireNonNull(idle);
            return this;
        }

        /**
         * Sets the bytes of large messages in flight per connection and side
         * ({@link ConnectionOptions#largeMessageBudget()}).
         *
         * @param bytes the budget (positive)
         * @return this
         */
        public Builder largeMessageBudget(long bytes) {
            largeMessageBudget = bytes;
            return this;
        }

        /**
         * Sets the largest message accepted from the peer ({@link ConnectionOptions#maxInboundMessageSize()}).
         *
         * @param bytes the limit (positive)
         * @return this
         */
        public Builder maxInboundMessageSize(int bytes) {
            maxInboundMessageSize = bytes;
            return this;
        }

        /**
         * Sets where large messages land ({@link ConnectionOptions#largeMessageMemory()}).
         *
         * @param allocator off-heap memory of at least the given size, or {@code null} for rdmaflux's own
         * @return this
         */
        public Builder largeMessageMemory(java.util.function.IntFunction<java.lang.foreign.MemorySegment> allocator) {
            largeMessageMemory = allocator;
            return this;
        }

        /**
         * Sets what an established connection does when its port goes down.
         *
         * @param policy wait for the transport's retries, or fail at once
         * @return this
         */
        public Builder portDownPolicy(PortDownPolicy policy) {
            portDownPolicy = policy;
            return this;
        }

        /**
         * Sets where user-visible signals are delivered.
         *
         * @param s where user-visible signals are delivered
         * @return this
         */
        public Builder scheduler(Scheduler s) {
            scheduler = Objects.requireNonNull(s, "scheduler");
            return this;
        }

        /**
         * Sets the metrics recorder.
         *
         * @param r the metrics recorder
         * @return this
         */
        public Builder recorder(RdmaRecorder r) {
            recorder = r;
            return this;
        }

        /**
         * The loops to run on, or {@code null} for {@link RdmaLoops#shared()}.
         *
         * @param l the loops to run on, or {@code null} for {@link RdmaLoops#shared()}
         * @return this
         */
        public Builder loops(RdmaLoops l) {
            loops = l;
            return this;
        }

        /**
         * Sets whether received messages are recycled ({@link ConnectionOptions#recycledMessages()}, the
         * default: no allocation per message, no protection against use after release).
         *
         * @param recycled whether received messages are the receive buffers' own, reused objects
         * @return this
         */
        public Builder recycledMessages(boolean recycled) {
            recycledMessages = recycled;
            return this;
        }

        /** {@return the options} */
        public ConnectionOptions build() {
            return new ConnectionOptions(this);
        }
    }
}
