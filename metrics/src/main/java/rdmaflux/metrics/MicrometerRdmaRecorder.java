package rdmaflux.metrics;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.Step;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.WcStatus;

/**
 * The Micrometer implementation of {@link RdmaRecorder}: set it with
 * {@code ConnectionOptions.builder().recorder(MicrometerRdmaRecorder.of(registry))}.
 *
 * <p>Every meter is created up front (in the constructor) and kept in a field or an array indexed by
 * an enum's ordinal, so the per-message methods only increment: no registry lookup, no tag
 * allocation. Meter names, units and tags are listed in {@code docs/metrics.md} and as constants here.
 *
 * <p>Tags are bounded: no per-connection tag. A {@code remote} tag (the peer's IP address, never its
 * port) is added only when {@link Builder#remoteAddressTag(int)} enables it; then at most that many
 * distinct addresses get their own value and later ones share {@code remote="other"}. Per-peer
 * recorders come from {@link #forPeer(InetSocketAddress)}.
 *
 * <p>Only bytes and seconds are declared as base units: Micrometer's Prometheus naming appends a base
 * unit to the name, and "messages" or "completions" would only lengthen it
 * ({@code rdmaflux_messages_sent_total}, not {@code rdmaflux_messages_sent_messages_total}).
 *
 * <p>One recorder may serve any number of connections and servers; recorders built on the same
 * registry with the same tags share their gauges, so creating several is harmless.
 */
public final class MicrometerRdmaRecorder implements RdmaRecorder {
    /** Gauge: established connections. */
    public static final String CONNECTIONS_ACTIVE = "rdmaflux.connections.active";
    /** Counter: client connects, tags {@code outcome}, {@code cause}. */
    public static final String CONNECTS = "rdmaflux.connects";
    /** Counter: server accepts, tags {@code outcome}, {@code cause}. */
    public static final String ACCEPTS = "rdmaflux.accepts";
    /** Timer: one successful connection step, tag {@code step}. */
    public static final String CONNECT_STEP = "rdmaflux.connect.step";
    /** Counter: messages whose send completed. */
    public static final String MESSAGES_SENT = "rdmaflux.messages.sent";
    /** Counter: payload bytes of messages whose send completed. */
    public static final String MESSAGES_SENT_BYTES = "rdmaflux.messages.sent.bytes";
    /** Counter: messages received (including RDMA write-with-immediate notifications). */
    public static final String MESSAGES_RECEIVED = "rdmaflux.messages.received";
    /** Counter: payload bytes of received messages. */
    public static final String MESSAGES_RECEIVED_BYTES = "rdmaflux.messages.received.bytes";
    /** Timer: post to completion of one operation, tag {@code op}. */
    public static final String OPERATION_LATENCY = "rdmaflux.operation.latency";
    /** Counter: failed work completions, tag {@code status}. */
    public static final String COMPLETION_ERRORS = "rdmaflux.completion.errors";
    /** Counter: sends that waited for a credit from the peer. */
    public static final String CREDIT_WAITS = "rdmaflux.credit.waits";
    /** Counter: CQ polls that returned completions; with {@link #CQ_COMPLETIONS} the mean poll batch size. */
    public static final String CQ_POLLS = "rdmaflux.cq.polls";
    /** Counter: completions those polls returned. */
    public static final String CQ_COMPLETIONS = "rdmaflux.cq.completions";
    /** Gauge: posted work requests (send and receive) not yet completed. */
    public static final String OUTSTANDING = "rdmaflux.work.requests.outstanding";
    /** Counter: connection manager events, tag {@code type}. */
    public static final String CM_EVENTS = "rdmaflux.cm.events";
    /** Gauge: multicast groups joined. */
    public static final String MULTICAST_GROUPS = "rdmaflux.multicast.groups";
    /** Counter: multicast datagrams sent. */
    public static final String MULTICAST_SENT = "rdmaflux.multicast.datagrams.sent";
    /** Counter: payload bytes of multicast datagrams sent. */
    public static final String MULTICAST_SENT_BYTES = "rdmaflux.multicast.datagrams.sent.bytes";
    /** Counter: multicast datagrams received. */
    public static final String MULTICAST_RECEIVED = "rdmaflux.multicast.datagrams.received";
    /** Counter: payload bytes of multicast datagrams received. */
    public static final String MULTICAST_RECEIVED_BYTES = "rdmaflux.multicast.datagrams.received.bytes";
    /** Counter: multicast datagrams dropped, tag {@code reason}. */
    public static final String MULTICAST_DROPPED = "rdmaflux.multicast.datagrams.dropped";

    /** The operations {@link #operationLatency} knows, in tag form; anything else is {@code other}. */
    static final String[] OPERATIONS = {"send", "write", "write_imm", "read", "cas", "faa", "other"};
    private static final int OTHER_OPERATION = OPERATIONS.length - 1;

    /**
     * Bucket boundaries of the latency timers: RDMA operations take microseconds; the top buckets
     * catch retries and RNR waits. Fixed boundaries keep the series count small and aggregatable.
     */
    static final Duration[] LATENCY_BUCKETS = {
            Duration.ofNanos(1_000), Duration.ofNanos(2_000), Duration.ofNanos(5_000),
            Duration.ofNanos(10_000), Duration.ofNanos(20_000), Duration.ofNanos(50_000),
            Duration.ofNanos(100_000), Duration.ofNanos(200_000), Duration.ofNanos(500_000),
            Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5), Duration.ofMillis(10),
            Duration.ofMillis(20), Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(500),
            Duration.ofSeconds(1)};
    /** Connection steps take from microseconds (address resolution on RoCE) to seconds (timeouts). */
    static final Duration[] STEP_BUCKETS = {
            Duration.ofNanos(100_000), Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10),
            Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(1),
            Duration.ofSeconds(2), Duration.ofSeconds(5), Duration.ofSeconds(10)};

    /** Failure causes beyond this many distinct names share {@code cause="other"}. */
    static final int MAX_CAUSES = 32;
    static final String NONE = "none";
    static final String OTHER = "other";
    static final String UNKNOWN = "unknown";

    private final MeterRegistry registry;
    private final Tags tags;
    private final Shared shared;
    private final String remote;

    private final LongAdder active;
    private final LongAdder outstanding;
    private final LongAdder multicastGroups;
    private final Counter[] connectOk = new Counter[2];
    private final Counter[] connectCancelled = new Counter[2];
    private final Map<String, Counter> connectFailures = new ConcurrentHashMap<>();
    private final Counter[] connectFailureOther = new Counter[2];
    private final Timer[] steps = new Timer[Step.values().length];
    private final Counter messagesSent;
    private final Counter bytesSent;
    private final Counter messagesReceived;
    private final Counter bytesReceived;
    private final Timer[] latency = new Timer[OPERATIONS.length];
    private final Counter[] completionErrors = new Counter[WcStatus.values().length];
    private final Counter creditWaits;
    private final Counter cqPolls;
    private final Counter cqCompletions;
    private final Counter multicastSent;
    private final Counter multicastSentBytes;
    private final Counter multicastReceived;
    private final Counter multicastReceivedBytes;
    private final Map<String, Counter> multicastDrops = new ConcurrentHashMap<>();

    private MicrometerRdmaRecorder(MeterRegistry registry, Tags common, Shared shared, String remote) {
        this.registry = registry;
        this.shared = shared;
        this.remote = remote;
        Tags t = remote == null ? common : common.and("remote", remote);
        this.tags = t;

        active = GaugeState.adder(registry, CONNECTIONS_ACTIVE, t, "Established RDMA connections", null);
        outstanding = GaugeState.adder(registry, OUTSTANDING, t,
                "Posted work requests (sends, receives, RDMA operations) not yet completed", null);
        multicastGroups = GaugeState.adder(registry, MULTICAST_GROUPS, t, "Multicast groups joined", null);

        for (int server = 0; server < 2; server++) {
            connectOk[server] = attemptCounter(server == 1, "success", NONE);
            connectCancelled[server] = attemptCounter(server == 1, "cancelled", NONE);
            connectFailureOther[server] = attemptCounter(server == 1, "failure", OTHER);
        }
        for (Step s : Step.values()) {
            if (s == Step.TRANSFER) {
                continue; // an established connection is not a step that finishes
            }
            steps[s.ordinal()] = Timer.builder(CONNECT_STEP)
                    .description("Duration of one successful step of establishing or closing a connection")
                    .tags(t).tag("step", s.name().toLowerCase(Locale.ROOT))
                    .serviceLevelObjectives(STEP_BUCKETS)
                    .register(registry);
        }
        messagesSent = Counter.builder(MESSAGES_SENT)
                .description("Messages whose send completed")
                .tags(t).register(registry);
        bytesSent = Counter.builder(MESSAGES_SENT_BYTES)
                .description("Payload bytes of messages whose send completed")
                .baseUnit("bytes").tags(t).register(registry);
        messagesReceived = Counter.builder(MESSAGES_RECEIVED)
                .description("Messages received, including RDMA write-with-immediate notifications")
                .tags(t).register(registry);
        bytesReceived = Counter.builder(MESSAGES_RECEIVED_BYTES)
                .description("Payload bytes of messages received")
                .baseUnit("bytes").tags(t).register(registry);
        for (int i = 0; i < OPERATIONS.length; i++) {
            latency[i] = Timer.builder(OPERATION_LATENCY)
                    .description("Time from posting an operation to its successful completion")
                    .tags(t).tag("op", OPERATIONS[i])
                    .serviceLevelObjectives(LATENCY_BUCKETS)
                    .register(registry);
        }
        for (WcStatus s : WcStatus.values()) {
            if (s == WcStatus.SUCCESS) {
                continue;
            }
            completionErrors[s.ordinal()] = Counter.builder(COMPLETION_ERRORS)
                    .description("Work completions that failed, by status")
                    .tags(t).tag("status", s.name().toLowerCase(Locale.ROOT))
                    .register(registry);
        }
        creditWaits = Counter.builder(CREDIT_WAITS)
                .description("Sends that had to wait because the peer had granted no receive credit")
                .tags(t).register(registry);
        // The batch size as two counters, not a DistributionSummary: a summary's max reads the wall
        // clock on every record, which costs more than the rest of a message's recording together,
        // and this runs on every poll. Mean batch = completions / polls.
        cqPolls = Counter.builder(CQ_POLLS)
                .description("Completion queue polls that returned completions")
                .tags(t).register(registry);
        cqCompletions = Counter.builder(CQ_COMPLETIONS)
                .description("Completions returned by completion queue polls (divided by polls: the mean batch)")
                .tags(t).register(registry);
        multicastSent = Counter.builder(MULTICAST_SENT)
                .description("Multicast datagrams sent")
                .tags(t).register(registry);
        multicastSentBytes = Counter.builder(MULTICAST_SENT_BYTES)
                .description("Payload bytes of multicast datagrams sent")
                .baseUnit("bytes").tags(t).register(registry);
        multicastReceived = Counter.builder(MULTICAST_RECEIVED)
                .description("Multicast datagrams received")
                .tags(t).register(registry);
        multicastReceivedBytes = Counter.builder(MULTICAST_RECEIVED_BYTES)
                .description("Payload bytes of multicast datagrams received")
                .baseUnit("bytes").tags(t).register(registry);
        for (String reason : new String[] {"overflow", "error", OTHER}) {
            multicastDrops.put(reason, dropCounter(reason));
        }
    }

    private Counter attemptCounter(boolean server, String outcome, String cause) {
        return Counter.builder(server ? ACCEPTS : CONNECTS)
                .description(server ? "Accepted connection requests, by outcome and failure cause"
                        : "Client connection attempts, by outcome and failure cause")
                .tags(tags).tag("outcome", outcome).tag("cause", cause)
                .register(registry);
    }

    private Counter dropCounter(String reason) {
        return Counter.builder(MULTICAST_DROPPED)
                .description("Multicast datagrams dropped, by reason").tags(tags).tag("reason", reason).register(registry);
    }

    /**
     * A recorder without extra tags and without the {@code remote} tag.
     *
     * @param registry where the meters go
     * @return the recorder
     */
    public static MicrometerRdmaRecorder of(MeterRegistry registry) {
        return builder(registry).build();
    }

    /**
     * Starts a recorder with extra tags or the per-peer {@code remote} tag.
     *
     * @param registry where the meters go
     * @return a builder for a recorder with tags or the {@code remote} tag
     */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(registry);
    }

    /**
     * The recorder for connections to or from one peer. Without the remote tag this is {@code this};
     * with it, a recorder whose meters carry {@code remote=<the peer's IP address>}, shared by every
     * connection with that address, or {@code remote="other"} once the cap is reached.
     *
     * @param peer the peer's address ({@code null}: the {@code unknown} value)
     * @return the recorder to use for that peer's connections
     */
    public MicrometerRdmaRecorder forPeer(InetSocketAddress peer) {
        if (shared.maxRemotes == 0) {
            return this;
        }
        String key = addressOf(peer);
        if (key == null) {
            return shared.root;
        }
        MicrometerRdmaRecorder r = shared.peers.get(key);
        if (r != null) {
            return r;
        }
        synchronized (shared) {
            r = shared.peers.get(key);
            if (r == null) {
                if (shared.peerCount.get() >= shared.maxRemotes) {
                    return shared.overflow();
                }
                r = new MicrometerRdmaRecorder(registry, shared.common, shared, key);
                shared.peers.put(key, r);
                shared.peerCount.incrementAndGet();
            }
            return r;
        }
    }

    private static String addressOf(InetSocketAddress peer) {
        if (peer == null) {
            return null;
        }
        InetAddress a = peer.getAddress();
        return a != null ? a.getHostAddress() : peer.getHostString();
    }

    /** {@return the registry the meters live in} */
    public MeterRegistry registry() {
        return registry;
    }

    /** {@return the tags every meter of this recorder carries (common tags, {@code remote} if enabled)} */
    public Tags tags() {
        return tags;
    }

    // ---------------------------------------------------------------- RdmaRecorder

    @Override
    public void connectOutcome(boolean server, Outcome outcome, String cause) {
        int side = server ? 1 : 0;
        switch (outcome) {
            case SUCCESS -> connectOk[side].increment();
            case CANCELLED -> connectCancelled[side].increment();
            case FAILURE -> failureCounter(server, cause).increment();
        }
    }

    /** Failures are rare: a map lookup is fine here, and the first failure of a kind registers its counter. */
    private Counter failureCounter(boolean server, String cause) {
        String c = cause == null || cause.isEmpty() ? UNKNOWN : cause;
        String key = (server ? "a:" : "c:") + c;
        Counter counter = connectFailures.get(key);
        if (counter != null) {
            return counter;
        }
        synchronized (connectFailures) {
            counter = connectFailures.get(key);
            if (counter == null) {
                if (connectFailures.size() >= MAX_CAUSES) {
                    return connectFailureOther[server ? 1 : 0];
                }
                counter = attemptCounter(server, "failure", c);
                connectFailures.put(key, counter);
            }
            return counter;
        }
    }

    @Override
    public void stepDuration(Step step, long nanos) {
        Timer t = steps[step.ordinal()];
        if (t != null) {
            t.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void activeConnections(int delta) {
        active.add(delta);
    }

    @Override
    public void cmEvent(CmEventType type) {
        shared.cmEvents[type.ordinal()].increment();
    }

    @Override
    public void messageSent(int bytes) {
        messagesSent.increment();
        bytesSent.increment(bytes);
    }

    @Override
    public void messageReceived(int bytes) {
        messagesReceived.increment();
        bytesReceived.increment(bytes);
    }

    @Override
    public void operationLatency(String operation, long nanos) {
        latency[operationIndex(operation)].record(nanos, TimeUnit.NANOSECONDS);
    }

    /** String switch: the literal's cached hash code and one equals, no allocation. */
    static int operationIndex(String operation) {
        return switch (operation) {
            case "send" -> 0;
            case "write" -> 1;
            case "write_imm" -> 2;
            case "read" -> 3;
            case "cas" -> 4;
            case "faa" -> 5;
            case null, default -> OTHER_OPERATION;
        };
    }

    @Override
    public void completionError(WcStatus status) {
        Counter c = completionErrors[status.ordinal()];
        if (c != null) {
            c.increment();
        }
    }

    @Override
    public void creditWait() {
        creditWaits.increment();
    }

    @Override
    public void pollBatch(int completions) {
        if (completions > 0) {
            cqPolls.increment();
            cqCompletions.increment(completions);
        }
    }

    @Override
    public void outstanding(int delta) {
        outstanding.add(delta);
    }

    // ---------------------------------------------------------------- multicast (see docs/metrics.md)

    /**
     * A multicast group was joined or left. Meant to become an {@link RdmaRecorder} method.
     *
     * @param delta +1 on join, -1 on leave
     */
    public void multicastGroups(int delta) {
        multicastGroups.add(delta);
    }

    /**
     * A multicast datagram's send completed. Meant to become an {@link RdmaRecorder} method.
     *
     * @param bytes its payload
     */
    public void datagramSent(int bytes) {
        multicastSent.increment();
        multicastSentBytes.increment(bytes);
    }

    /**
     * A multicast datagram was received. Meant to become an {@link RdmaRecorder} method.
     *
     * @param bytes its payload (without the 40-byte GRH)
     */
    public void datagramReceived(int bytes) {
        multicastReceived.increment();
        multicastReceivedBytes.increment(bytes);
    }

    /**
     * A received multicast datagram was dropped. Meant to become an {@link RdmaRecorder} method.
     *
     * @param reason {@code overflow} (the subscriber did not keep up) or {@code error} (failed
     *               completion); other values are counted as {@code other}
     */
    public void datagramDropped(String reason) {
        Counter c = reason == null ? null : multicastDrops.get(reason);
        (c != null ? c : multicastDrops.get(OTHER)).increment();
    }

    @Override
    public String toString() {
        return "MicrometerRdmaRecorder" + tags;
    }

    /** State shared by a root recorder and its per-peer recorders. */
    private static final class Shared {
        final Tags common;
        final int maxRemotes;
        final Counter[] cmEvents = new Counter[CmEventType.values().length];
        final Map<String, MicrometerRdmaRecorder> peers = new ConcurrentHashMap<>();
        final AtomicInteger peerCount = new AtomicInteger();
        MicrometerRdmaRecorder root;
        private MicrometerRdmaRecorder other;

        Shared(MeterRegistry registry, Tags common, int maxRemotes) {
            this.common = common;
            this.maxRemotes = maxRemotes;
            // CM events belong to the process-wide event channel, not to a peer: never a remote tag.
            for (CmEventType type : CmEventType.values()) {
                cmEvents[type.ordinal()] = Counter.builder(CM_EVENTS)
                        .description("Connection manager events read from the event channel, by type")
                        .tags(common).tag("type", type.name().toLowerCase(Locale.ROOT))
                        .register(registry);
            }
        }

        synchronized MicrometerRdmaRecorder overflow() {
            if (other == null) {
                other = new MicrometerRdmaRecorder(root.registry, common, this, OTHER);
            }
            return other;
        }
    }

    /** Builds a {@link MicrometerRdmaRecorder}. */
    public static final class Builder {
        private final MeterRegistry registry;
        private Tags tags = Tags.empty();
        private int maxRemotes;

        Builder(MeterRegistry registry) {
            this.registry = Objects.requireNonNull(registry, "registry");
        }

        /**
         * Adds tags to every meter.
         *
         * @param extra tags every meter carries (e.g. {@code application}); keep their values bounded
         * @return this
         */
        public Builder tags(Iterable<Tag> extra) {
            tags = tags.and(extra);
            return this;
        }

        /**
         * Adds tags to every meter.
         *
         * @param keyValues tag keys and values, alternating
         * @return this
         */
        public Builder tags(String... keyValues) {
            tags = tags.and(keyValues);
            return this;
        }

        /**
         * Adds a {@code remote} tag with the peer's IP address to the per-connection meters (connection
         * counts, connects/accepts, messages, latency, errors, credits, polls, outstanding requests).
         *
         * @param maxAddresses how many distinct addresses get their own value (1..1024); later ones are
         *                     counted under {@code remote="other"}, meters recorded without a peer under
         *                     {@code remote="unknown"}; 0 disables the tag (the default)
         * @return this
         */
        public Builder remoteAddressTag(int maxAddresses) {
            if (maxAddresses < 0 || maxAddresses > 1024) {
                throw new IllegalArgumentException("maxAddresses must be 0..1024, got " + maxAddresses);
            }
            maxRemotes = maxAddresses;
            return this;
        }

        /** {@return the recorder; its meters are registered now} */
        public MicrometerRdmaRecorder build() {
            Shared shared = new Shared(registry, tags, maxRemotes);
            MicrometerRdmaRecorder root = new MicrometerRdmaRecorder(registry, tags, shared,
                    maxRemotes == 0 ? null : UNKNOWN);
            shared.root = root;
            return root;
        }
    }
}
