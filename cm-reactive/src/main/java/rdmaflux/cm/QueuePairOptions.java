package rdmaflux.cm;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;

/**
 * The part of {@link ConnectionOptions} about the verbs objects a connection is made of: how rdma_cm sets
 * them up (the timeout of each step, the private data), the RC queue pair's attributes in the verbs' units
 * and ranges, and how its completion queue is waited on. What rdmaflux's protocol and threads do with a
 * connection is {@link ConnectionOptions}' own. Users see these members as {@code ConnectionOptions}' and
 * {@code ConnectionOptions.Builder}'s.
 *
 * <p>Threads: any; immutable (the builder is not thread-safe: one thread builds).
 */
abstract sealed class QueuePairOptions permits ConnectionOptions {
    /** The CM's limit on a REQ's private data (the RC data path's {@code Wire.MAX_CONNECT_PRIVATE_DATA}). */
    static final int MAX_CONNECT_PRIVATE_DATA = 56;
    /** 255 is rdma_cm's own "device maximum" marker (RDMA_MAX_INIT_DEPTH, RDMA_MAX_RESP_RES). */
    private static final int MAX_READ_DEPTH = 254;

    private final Map<Step, Duration> timeouts;
    private final int sendQueueDepth;
    private final int maxInlineData;
    private final int retryCount;
    private final int rnrRetryCount;
    private final int initiatorDepth;
    private final int responderResources;
    private final int ackTimeout;
    private final int typeOfService;
    private final byte[] privateData;
    private final ConnectionOptions.CompletionMode completionMode;
    private final Duration busyPoll;
    private final boolean sharedCompletionQueue;

    QueuePairOptions(Builder b) {
        timeouts = Map.copyOf(b.timeouts);
        sendQueueDepth = b.sendQueueDepth;
        maxInlineData = b.maxInlineData;
        retryCount = b.retryCount;
        rnrRetryCount = b.rnrRetryCount;
        initiatorDepth = b.initiatorDepth;
        responderResources = b.responderResources;
        ackTimeout = b.ackTimeout;
        typeOfService = b.typeOfService;
        privateData = b.privateData.clone();
        completionMode = b.completionMode;
        busyPoll = b.busyPoll;
        sharedCompletionQueue = b.sharedCompletionQueue;
    }

    /**
     * The timeout of a step: by default 2 s for {@link Step#ADDRESS} and {@link Step#ROUTE}, 10 s for
     * {@link Step#CONNECT} and {@link Step#ACCEPT}, 3 s for {@link Step#DISCONNECT}.
     *
     * @param step a step
     * @return its timeout, or {@code null} for none ({@link Step#TRANSFER}: an established connection)
     */
    public Duration timeout(Step step) {
        return timeouts.get(step);
    }

    /** {@return the step timeouts, per step (an unmodifiable map)} */
    public Map<Step, Duration> timeouts() {
        return timeouts;
    }

    /** {@return send queue depth: sends, RDMA operations and control messages in flight; 128 by default} */
    public int sendQueueDepth() {
        return sendQueueDepth;
    }

    /** {@return the largest payload sent inline; 64 bytes by default} */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * {@return transport retries: a send the peer does not acknowledge is sent this many times more before
     * the connection fails with {@code RETRY_EXC_ERR}; 6 by default}
     *
     * <p>The client's value applies to both sides (the IB CM carries it in the request). Soft-RoCE (rxe)
     * retries forever when this is 7, so the failure bound of {@link #ackTimeout()} only holds below 7.
     */
    public int retryCount() {
        return retryCount;
    }

    /** {@return RNR retries, for a peer that has no receive posted; 7 (forever) by default} */
    public int rnrRetryCount() {
        return rnrRetryCount;
    }

    /**
     * {@return RDMA reads and atomics this side keeps in flight, or {@link ConnectionOptions#DEVICE_MAXIMUM}
     * (the default); connecting fails when it exceeds the device's {@code max_qp_init_rd_atom}}
     */
    public int initiatorDepth() {
        return initiatorDepth;
    }

    /**
     * {@return RDMA reads and atomics from the peer this side accepts in flight, or
     * {@link ConnectionOptions#DEVICE_MAXIMUM} (the default); connecting fails when it exceeds the device's
     * {@code max_qp_rd_atom}}
     */
    public int responderResources() {
        return responderResources;
    }

    /**
     * {@return the local ACK timeout exponent n (4.096 us x 2^n; 0 = infinite), or
     * {@link ConnectionOptions#DEVICE_DEFAULT}; 17 (0.54 s) by default}
     *
     * <p>With {@link #retryCount()}, it bounds how long a silent peer (wire cut, host gone) goes unnoticed
     * while something is being sent: 4.096 us x 2^n x (retries + 1), 3.8 s by default (Soft-RoCE was
     * measured taking up to twice that with a stream in flight). rdma_cm's own default on RoCE (kept with
     * {@code DEVICE_DEFAULT}) is 19 on Soft-RoCE, 2.1 s per try.
     */
    public int ackTimeout() {
        return ackTimeout;
    }

    /**
     * {@return the type of service byte of the connection's traffic, or {@link ConnectionOptions#DEVICE_DEFAULT}
     * (the default); set by the client before route resolution, a server's connections follow the client's
     * request}
     */
    public int typeOfService() {
        return typeOfService;
    }

    /**
     * {@return a copy of the application's private data sent with connect or accept; empty by default}
     *
     * <p>Up to 56 bytes with {@link ConnectionOptions.Protocol#RAW}, 12 fewer
     * with {@link ConnectionOptions.Protocol#CREDITS}, whose hello comes first.
     */
    public byte[] privateData() {
        return privateData.clone();
    }

    /** {@return how completions are waited for; {@link ConnectionOptions.CompletionMode#EVENT_DRIVEN} by default} */
    public ConnectionOptions.CompletionMode completionMode() {
        return completionMode;
    }

    /**
     * {@return how long to spin in {@link ConnectionOptions.CompletionMode#BUSY_POLL} before sleeping; 1 ms by
     * default}
     */
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
     * completion to its connection by QP number, in order. Fewer CQs for many connections: less device and
     * kernel memory, and one poll serves many connections; the cost is one copy of each completion (one
     * {@code ibv_wc}, 48 bytes). A server's accepted connections share CQs when its connection options say so.
     *
     * <p>Ignored in {@link ConnectionOptions.CompletionMode#BUSY_POLL}: a busy-polling connection keeps a CQ of
     * its own, because spinning on a shared CQ would spin for all the connections on it.
     */
    public boolean sharedCompletionQueue() {
        return sharedCompletionQueue;
    }

    String queuePairToString() {
        return "timeouts=" + new EnumMap<>(timeouts) + ", sendQueueDepth=" + sendQueueDepth + ", maxInlineData="
                + maxInlineData + ", retryCount=" + retryCount + ", rnrRetryCount=" + rnrRetryCount
                + ", initiatorDepth=" + initiatorDepth + ", responderResources=" + responderResources
                + ", ackTimeout=" + ackTimeout + ", typeOfService=" + typeOfService + ", privateData="
                + privateData.length + " bytes, completionMode=" + completionMode + ", busyPoll=" + busyPoll
                + ", sharedCompletionQueue=" + sharedCompletionQueue;
    }

    /** The setters of the transport options, which {@link ConnectionOptions.Builder} inherits. */
    abstract static sealed class Builder permits ConnectionOptions.Builder {
        private final Map<Step, Duration> timeouts = new EnumMap<>(Step.class);
        private int sendQueueDepth = 128;
        private int maxInlineData = 64;
        private int retryCount = 6;
        private int rnrRetryCount = 7;
        private int initiatorDepth = ConnectionOptions.DEVICE_MAXIMUM;
        private int responderResources = ConnectionOptions.DEVICE_MAXIMUM;
        private int ackTimeout = 17;
        private int typeOfService = ConnectionOptions.DEVICE_DEFAULT;
        private byte[] privateData = new byte[0];
        private ConnectionOptions.CompletionMode completionMode = ConnectionOptions.CompletionMode.EVENT_DRIVEN;
        private Duration busyPoll = Duration.ofMillis(1);
        private boolean sharedCompletionQueue = true;

        Builder() {
            timeouts.put(Step.ADDRESS, Duration.ofSeconds(2));
            timeouts.put(Step.ROUTE, Duration.ofSeconds(2));
            timeouts.put(Step.CONNECT, Duration.ofSeconds(10));
            timeouts.put(Step.ACCEPT, Duration.ofSeconds(10));
            timeouts.put(Step.DISCONNECT, Duration.ofSeconds(3));
        }

        Builder(QueuePairOptions o) {
            timeouts.putAll(o.timeouts);
            sendQueueDepth = o.sendQueueDepth;
            maxInlineData = o.maxInlineData;
            retryCount = o.retryCount;
            rnrRetryCount = o.rnrRetryCount;
            initiatorDepth = o.initiatorDepth;
            responderResources = o.responderResources;
            ackTimeout = o.ackTimeout;
            typeOfService = o.typeOfService;
            privateData = o.privateData;
            completionMode = o.completionMode;
            busyPoll = o.busyPoll;
            sharedCompletionQueue = o.sharedCompletionQueue;
        }

        private ConnectionOptions.Builder self() {
            return (ConnectionOptions.Builder) this;
        }

        /** The private data set, for the check against the protocol's room. */
        int privateDataLength() {
            return privateData.length;
        }

        /**
         * Sets the timeout of a step ({@link ConnectionOptions#timeout(Step) ConnectionOptions.timeout(Step)}).
         *
         * @param step any step but {@link Step#TRANSFER}, which has no timeout
         * @param timeout a positive duration
         * @return this
         */
        public ConnectionOptions.Builder timeout(Step step, Duration timeout) {
            if (OptionChecks.notNull("step", step) == Step.TRANSFER) {
                throw new IllegalArgumentException("timeout's step must be one of ADDRESS, ROUTE, CONNECT, ACCEPT, "
                        + "DISCONNECT (an established connection has no timeout), got TRANSFER");
            }
            timeouts.put(step, OptionChecks.positive("timeout(" + step + ")", timeout));
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#sendQueueDepth() ConnectionOptions.sendQueueDepth()}.
         *
         * @param depth at least 1
         * @return this
         */
        public ConnectionOptions.Builder sendQueueDepth(int depth) {
            sendQueueDepth = OptionChecks.atLeast("sendQueueDepth", depth, 1);
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#maxInlineData() ConnectionOptions.maxInlineData()}.
         *
         * @param bytes at least 0
         * @return this
         */
        public ConnectionOptions.Builder maxInlineData(int bytes) {
            maxInlineData = OptionChecks.atLeast("maxInlineData", bytes, 0);
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#retryCount() ConnectionOptions.retryCount()}.
         *
         * @param n 0..7 (7: forever on Soft-RoCE)
         * @return this
         */
        public ConnectionOptions.Builder retryCount(int n) {
            retryCount = OptionChecks.range("retryCount", n, 0, 7);
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#rnrRetryCount() ConnectionOptions.rnrRetryCount()}.
         *
         * @param n 0..7 (7 = forever)
         * @return this
         */
        public ConnectionOptions.Builder rnrRetryCount(int n) {
            rnrRetryCount = OptionChecks.range("rnrRetryCount", n, 0, 7);
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#initiatorDepth() ConnectionOptions.initiatorDepth()}.
         *
         * @param n 0..254, or {@link ConnectionOptions#DEVICE_MAXIMUM}
         * @return this
         */
        public ConnectionOptions.Builder initiatorDepth(int n) {
            initiatorDepth = OptionChecks.rangeOr("initiatorDepth", n, 0, MAX_READ_DEPTH,
                    ConnectionOptions.DEVICE_MAXIMUM, "DEVICE_MAXIMUM");
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#responderResources() ConnectionOptions.responderResources()}.
         *
         * @param n 0..254, or {@link ConnectionOptions#DEVICE_MAXIMUM}
         * @return this
         */
        public ConnectionOptions.Builder responderResources(int n) {
            responderResources = OptionChecks.rangeOr("responderResources", n, 0, MAX_READ_DEPTH,
                    ConnectionOptions.DEVICE_MAXIMUM, "DEVICE_MAXIMUM");
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#ackTimeout() ConnectionOptions.ackTimeout()}.
         *
         * @param exponent 0..31 (4.096 us x 2<sup>exponent</sup>, 0 = infinite), or
         *                 {@link ConnectionOptions#DEVICE_DEFAULT}
         * @return this
         */
        public ConnectionOptions.Builder ackTimeout(int exponent) {
            ackTimeout = OptionChecks.rangeOr("ackTimeout", exponent, 0, 31, ConnectionOptions.DEVICE_DEFAULT,
                    "DEVICE_DEFAULT");
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#typeOfService() ConnectionOptions.typeOfService()}.
         *
         * @param tos 0..255, or {@link ConnectionOptions#DEVICE_DEFAULT}
         * @return this
         */
        public ConnectionOptions.Builder typeOfService(int tos) {
            typeOfService = OptionChecks.rangeOr("typeOfService", tos, 0, 255, ConnectionOptions.DEVICE_DEFAULT,
                    "DEVICE_DEFAULT");
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#completionMode() ConnectionOptions.completionMode()}.
         *
         * @param mode not null
         * @return this
         */
        public ConnectionOptions.Builder completionMode(ConnectionOptions.CompletionMode mode) {
            completionMode = OptionChecks.notNull("completionMode", mode);
            return self();
        }

        /**
         * Switches to {@link ConnectionOptions.CompletionMode#BUSY_POLL}, spinning this long before sleeping
         * ({@link ConnectionOptions#busyPoll() ConnectionOptions.busyPoll()}).
         *
         * @param spin zero or positive
         * @return this
         */
        public ConnectionOptions.Builder busyPoll(Duration spin) {
            busyPoll = OptionChecks.notNegative("busyPoll", spin, "one poll before sleeping");
            completionMode = ConnectionOptions.CompletionMode.BUSY_POLL;
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#sharedCompletionQueue() ConnectionOptions.sharedCompletionQueue()}.
         *
         * @param shared whether to share
         * @return this
         */
        public ConnectionOptions.Builder sharedCompletionQueue(boolean shared) {
            sharedCompletionQueue = shared;
            return self();
        }

        /**
         * Sets {@link ConnectionOptions#privateData() ConnectionOptions.privateData()}; {@code build()} checks it
         * against the protocol's room.
         *
         * @param data up to 56 bytes (12 fewer with {@link ConnectionOptions.Protocol#CREDITS}); copied
         * @return this
         */
        public ConnectionOptions.Builder privateData(byte[] data) {
            if (OptionChecks.notNull("privateData", data).length > MAX_CONNECT_PRIVATE_DATA) {
                throw new IllegalArgumentException("privateData must be at most " + MAX_CONNECT_PRIVATE_DATA
                        + " bytes (" + (MAX_CONNECT_PRIVATE_DATA - ConnectionOptions.CREDITS_HEADER)
                        + " with the CREDITS protocol), got " + data.length);
            }
            privateData = data.clone();
            return self();
        }
    }
}
