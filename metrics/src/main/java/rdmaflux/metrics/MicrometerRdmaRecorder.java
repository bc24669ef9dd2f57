package rdmaflux.metrics;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.Step;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.WcStatus;

/**
 * The Micrometer implementation of {@link RdmaRecorder}: set it with
 * {@code ConnectionOptions.builder().recorder(MicrometerRdmaRecorder.of(registry))}.
 *
 * <p>It is a {@link MeterBinder}. A recorder built on a registry ({@link #of}, {@link #builder(MeterRegistry)})
 * has registered its meters there already, and binding it to that registry again does nothing (Spring Boot
 * binds every {@code MeterBinder} bean). One built with {@link #builder()} registers its meters when
 * {@link #bindTo} is called, so meter filters configured on the registry until then apply to them; it records
 * nothing before. A recorder records to one registry: to send its meters to several, bind a
 * {@code CompositeMeterRegistry}.
 *
 * <p>Every meter is created up front, with the recorder ({@code RecorderMeters}), and kept in a field or an
 * array indexed by an enum's ordinal, so the per-message methods only increment: no registry lookup, no tag
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
 *
 * <p>Threads: any; the recording methods run on the loops' threads and only increment thread-safe meters;
 * {@link #bindTo} publishes the meters through a volatile field.
 */
public final class MicrometerRdmaRecorder implements RdmaRecorder, MeterBinder {
    /** Gauge: established connections. */
    public static final String CONNECTIONS_ACTIVE = "rdmaflux.connections.active";
    /** Counter: client connects, tags {@code outcome}, {@code error}. */
    public static final String CONNECTS = "rdmaflux.connects";
    /** Counter: server accepts, tags {@code outcome}, {@code error}. */
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

    private final RecorderSettings settings;
    /** The registry bound to, {@code null} until {@link #bindTo}; written under {@code this}'s lock. */
    private volatile MeterRegistry registry;
    private volatile RecorderFamily shared;
    private volatile RecorderMeters meters;

    /** A recorder whose meters are registered in {@code registry} now (also a per-peer one). */
    MicrometerRdmaRecorder(MeterRegistry registry, RecorderSettings settings, RecorderFamily shared, String remote) {
        this.settings = settings;
        this.registry = registry;
        this.shared = shared;
        this.meters = settings.meters(registry, remote);
    }

    /**
     * A recorder not yet bound: its meters live in a registry of its own without children, where recording
     * goes nowhere, until {@link #bindTo} replaces them.
     */
    private MicrometerRdmaRecorder(RecorderSettings settings) {
        this.settings = settings;
        MeterRegistry nowhere = new CompositeMeterRegistry();
        RecorderSettings unbound = settings.withoutRemotes();
        this.shared = new RecorderFamily(nowhere, unbound);
        this.meters = unbound.meters(nowhere, null);
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
     * Starts a recorder with extra tags, the per-peer {@code remote} tag or other buckets, whose meters are
     * registered in {@code registry} when it is built.
     *
     * @param registry where the meters go
     * @return a builder for a recorder with tags or the {@code remote} tag
     */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(Objects.requireNonNull(registry, "registry"));
    }

    /**
     * Starts a recorder whose meters are registered when it is bound ({@link #bindTo}), as a
     * {@link MeterBinder}: the registry's meter filters configured until then apply to them.
     *
     * @return a builder for a recorder that is not bound yet
     */
    public static Builder builder() {
        return new Builder(null);
    }

    /**
     * Registers this recorder's meters in {@code registry}, once. Binding again to the registry it records to
     * does nothing.
     *
     * @param registry where the meters go
     * @throws IllegalStateException when this recorder records to another registry already
     */
    @Override
    public synchronized void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        MeterRegistry bound = this.registry;
        if (bound == registry) {
            return;
        }
        if (bound != null) {
            throw new IllegalStateException("this MicrometerRdmaRecorder records to " + bound
                    + " already and cannot be bound to " + registry + " as well: a recorder records to one "
                    + "registry; bind a CompositeMeterRegistry holding both, or build one recorder per registry");
        }
        RecorderFamily s = new RecorderFamily(registry, settings);
        RecorderMeters m = settings.meters(registry, settings.maxRemotes() == 0 ? null : RecorderMeters.UNKNOWN);
        s.root = this;
        this.shared = s;
        this.meters = m;
        this.registry = registry; // last: whoever sees it bound sees its meters
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
        if (shared.settings.maxRemotes() == 0) {
            return this;
        }
        String key = addressOf(peer);
        if (key == null) {
            return shared.root;
        }
        RecorderFamily shared = this.shared;
        MicrometerRdmaRecorder r = shared.peers.get(key);
        if (r != null) {
            return r;
        }
        synchronized (shared) {
            r = shared.peers.get(key);
            if (r == null) {
                if (shared.peerCount.get() >= shared.settings.maxRemotes()) {
                    return shared.overflow();
                }
                r = new MicrometerRdmaRecorder(shared.registry, shared.settings, shared, key);
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

    /**
     * {@return the registry the meters live in}
     *
     * @throws IllegalStateException before a recorder from {@link #builder()} is bound
     */
    public MeterRegistry registry() {
        MeterRegistry r = registry;
        if (r == null) {
            throw new IllegalStateException("this MicrometerRdmaRecorder is not bound to a registry yet: "
                    + "call bindTo(registry), or build it with MicrometerRdmaRecorder.builder(registry)");
        }
        return r;
    }

    /** {@return the tags every meter of this recorder carries (common tags, {@code remote} if enabled)} */
    public Tags tags() {
        return meters.tags;
    }

    // ---------------------------------------------------------------- RdmaRecorder

    @Override
    public void connectOutcome(boolean server, Outcome outcome, String error) {
        int side = server ? 1 : 0;
        RecorderMeters meters = this.meters;
        switch (outcome) {
            case SUCCESS -> meters.connectOk[side].increment();
            case CANCELLED -> meters.connectCancelled[side].increment();
            case FAILURE -> meters.failureCounter(server, error).increment();
        }
    }

    @Override
    public void stepDuration(Step step, long nanos) {
        Timer t = meters.steps[step.ordinal()];
        if (t != null) {
            t.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void activeConnections(int delta) {
        meters.active.add(delta);
    }

    @Override
    public void cmEvent(CmEventType type) {
        shared.cmEvents[type.ordinal()].increment();
    }

    @Override
    public void messageSent(int bytes) {
        RecorderMeters meters = this.meters;
        meters.messagesSent.increment();
        meters.bytesSent.increment(bytes);
    }

    @Override
    public void messageReceived(int bytes) {
        RecorderMeters meters = this.meters;
        meters.messagesReceived.increment();
        meters.bytesReceived.increment(bytes);
    }

    @Override
    public void operationLatency(String operation, long nanos) {
        meters.latency[operationIndex(operation)].record(nanos, TimeUnit.NANOSECONDS);
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
            case null, default -> RecorderMeters.OTHER_OPERATION;
        };
    }

    @Override
    public void completionError(WcStatus status) {
        Counter c = meters.completionErrors[status.ordinal()];
        if (c != null) {
            c.increment();
        }
    }

    @Override
    public void creditWait() {
        meters.creditWaits.increment();
    }

    @Override
    public void pollBatch(int completions) {
        if (completions > 0) {
            RecorderMeters meters = this.meters;
            meters.cqPolls.increment();
            meters.cqCompletions.increment(completions);
        }
    }

    @Override
    public void outstanding(int delta) {
        meters.outstanding.add(delta);
    }

    // ---------------------------------------------------------------- multicast (see docs/metrics.md)

    /**
     * A multicast group was joined or left. Meant to become an {@link RdmaRecorder} method.
     *
     * @param delta +1 on join, -1 on leave
     */
    public void multicastGroups(int delta) {
        meters.multicastGroups.add(delta);
    }

    /**
     * A multicast datagram's send completed. Meant to become an {@link RdmaRecorder} method.
     *
     * @param bytes its payload
     */
    public void datagramSent(int bytes) {
        RecorderMeters meters = this.meters;
        meters.multicastSent.increment();
        meters.multicastSentBytes.increment(bytes);
    }

    /**
     * A multicast datagram was received. Meant to become an {@link RdmaRecorder} method.
     *
     * @param bytes its payload (without the 40-byte GRH)
     */
    public void datagramReceived(int bytes) {
        RecorderMeters meters = this.meters;
        meters.multicastReceived.increment();
        meters.multicastReceivedBytes.increment(bytes);
    }

    /**
     * A received multicast datagram was dropped. Meant to become an {@link RdmaRecorder} method.
     *
     * @param reason {@code overflow} (the subscriber did not keep up) or {@code error} (failed
     *               completion); other values are counted as {@code other}
     */
    public void datagramDropped(String reason) {
        meters.dropCounter(reason).increment();
    }

    @Override
    public String toString() {
        return "MicrometerRdmaRecorder" + meters.tags;
    }

    /** Builds a {@link MicrometerRdmaRecorder}. */
    public static final class Builder {
        private final MeterRegistry registry;
        private Tags tags = Tags.empty();
        private int maxRemotes;
        private Duration[] latencyBuckets = RecorderMeters.LATENCY_BUCKETS;
        private Duration[] stepBuckets = RecorderMeters.STEP_BUCKETS;

        Builder(MeterRegistry registry) {
            this.registry = registry;
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

        /**
         * Sets the histogram buckets (service level objectives) of {@link #OPERATION_LATENCY}; the default
         * is 1 µs, 2 µs, 5 µs ... 500 ms, 1 s.
         *
         * @param boundaries upper bounds of the buckets, positive and ascending; none: no buckets
         * @return this
         * @throws IllegalArgumentException when a boundary is not positive or not above the one before
         */
        public Builder operationLatencyBuckets(Duration... boundaries) {
            latencyBuckets = checked("operationLatencyBuckets", boundaries);
            return this;
        }

        /**
         * Sets the histogram buckets (service level objectives) of {@link #CONNECT_STEP}; the default is
         * 100 µs, 1 ms, 5 ms ... 5 s, 10 s.
         *
         * @param boundaries upper bounds of the buckets, positive and ascending; none: no buckets
         * @return this
         * @throws IllegalArgumentException when a boundary is not positive or not above the one before
         */
        public Builder connectStepBuckets(Duration... boundaries) {
            stepBuckets = checked("connectStepBuckets", boundaries);
            return this;
        }

        private static Duration[] checked(String what, Duration[] boundaries) {
            Duration[] b = Objects.requireNonNull(boundaries, what).clone();
            for (int i = 0; i < b.length; i++) {
                Objects.requireNonNull(b[i], what + ": boundary " + i);
                if (b[i].isNegative() || b[i].isZero()) {
                    throw new IllegalArgumentException(what + ": boundaries must be positive, boundary " + i
                            + " is " + b[i]);
                }
                if (i > 0 && b[i].compareTo(b[i - 1]) <= 0) {
                    throw new IllegalArgumentException(what + ": boundaries must ascend, boundary " + i + " ("
                            + b[i] + ") is not above boundary " + (i - 1) + " (" + b[i - 1] + ")");
                }
            }
            return b;
        }

        /**
         * Builds the recorder. With a registry ({@link #builder(MeterRegistry)}) its meters are registered
         * now; without one ({@link #builder()}) when it is bound.
         *
         * @return the recorder
         */
        public MicrometerRdmaRecorder build() {
            RecorderSettings settings = new RecorderSettings(tags, maxRemotes, latencyBuckets, stepBuckets);
            if (registry == null) {
                return new MicrometerRdmaRecorder(settings);
            }
            RecorderFamily shared = new RecorderFamily(registry, settings);
            MicrometerRdmaRecorder root = new MicrometerRdmaRecorder(registry, settings, shared,
                    maxRemotes == 0 ? null : RecorderMeters.UNKNOWN);
            shared.root = root;
            return root;
        }
    }
}
