package rdmaflux.metrics;

import static rdmaflux.metrics.MicrometerRdmaRecorder.ACCEPTS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.COMPLETION_ERRORS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.CONNECTIONS_ACTIVE;
import static rdmaflux.metrics.MicrometerRdmaRecorder.CONNECTS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.CONNECT_STEP;
import static rdmaflux.metrics.MicrometerRdmaRecorder.CQ_COMPLETIONS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.CQ_POLLS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.CREDIT_WAITS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MESSAGES_RECEIVED;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MESSAGES_RECEIVED_BYTES;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MESSAGES_SENT;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MESSAGES_SENT_BYTES;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MULTICAST_DROPPED;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MULTICAST_GROUPS;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MULTICAST_RECEIVED;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MULTICAST_RECEIVED_BYTES;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MULTICAST_SENT;
import static rdmaflux.metrics.MicrometerRdmaRecorder.MULTICAST_SENT_BYTES;
import static rdmaflux.metrics.MicrometerRdmaRecorder.OPERATION_LATENCY;
import static rdmaflux.metrics.MicrometerRdmaRecorder.OUTSTANDING;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.Tags;
import rdmaflux.cm.Step;
import rdmaflux.verbs.WcStatus;

/**
 * The meters of one {@link MicrometerRdmaRecorder} (one set of tags), registered up front with their
 * descriptions, units and buckets and kept in fields, or in arrays indexed by an enum's ordinal, so that
 * recording only increments. Only a connect failure's error and a multicast drop's reason register a
 * meter later, the first time they are seen, up to a bound.
 *
 * <p>Threads: any; the meters are thread-safe, the lazily registered ones are registered under a lock.
 */
final class RecorderMeters {
    /**
     * The operations {@link MicrometerRdmaRecorder#operationLatency} knows, in tag form; anything else is
     * {@code other}.
     */
    static final String[] OPERATIONS = {"send", "write", "write_imm", "read", "cas", "faa", "other"};
    static final int OTHER_OPERATION = OPERATIONS.length - 1;

    /**
     * Default bucket boundaries of the latency timers: RDMA operations take microseconds; the top buckets
     * catch retries and RNR waits. Fixed boundaries keep the series count small and aggregatable.
     */
    static final Duration[] LATENCY_BUCKETS = {
            Duration.ofNanos(1_000), Duration.ofNanos(2_000), Duration.ofNanos(5_000),
            Duration.ofNanos(10_000), Duration.ofNanos(20_000), Duration.ofNanos(50_000),
            Duration.ofNanos(100_000), Duration.ofNanos(200_000), Duration.ofNanos(500_000),
            Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5), Duration.ofMillis(10),
            Duration.ofMillis(20), Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(500),
            Duration.ofSeconds(1)};
    /** Default step buckets: connection steps take from microseconds (address resolution on RoCE) to seconds (timeouts). */
    static final Duration[] STEP_BUCKETS = {
            Duration.ofNanos(100_000), Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10),
            Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(1),
            Duration.ofSeconds(2), Duration.ofSeconds(5), Duration.ofSeconds(10)};

    /** Failures beyond this many distinct exception names share {@code error="other"}. */
    static final int MAX_ERRORS = 32;
    static final String NONE = RdmaTags.NONE;
    static final String OTHER = RdmaTags.OTHER;
    static final String UNKNOWN = RdmaTags.UNKNOWN;

    private final MeterRegistry registry;
    final Tags tags;

    final LongAdder active;
    final LongAdder outstanding;
    final LongAdder multicastGroups;
    final Counter[] connectOk = new Counter[2];
    final Counter[] connectCancelled = new Counter[2];
    private final Map<String, Counter> connectFailures = new ConcurrentHashMap<>();
    private final Counter[] connectFailureOther = new Counter[2];
    final Timer[] steps = new Timer[Step.values().length];
    final Counter messagesSent;
    final Counter bytesSent;
    final Counter messagesReceived;
    final Counter bytesReceived;
    final Timer[] latency = new Timer[OPERATIONS.length];
    final Counter[] completionErrors = new Counter[WcStatus.values().length];
    final Counter creditWaits;
    final Counter cqPolls;
    final Counter cqCompletions;
    final Counter multicastSent;
    final Counter multicastSentBytes;
    final Counter multicastReceived;
    final Counter multicastReceivedBytes;
    private final Map<String, Counter> multicastDrops = new ConcurrentHashMap<>();

    /**
     * Registers every meter of one tag set.
     *
     * @param registry where they go
     * @param t the tags every meter carries
     * @param latencyBuckets the {@link MicrometerRdmaRecorder#OPERATION_LATENCY} boundaries
     * @param stepBuckets the {@link MicrometerRdmaRecorder#CONNECT_STEP} boundaries
     */
    RecorderMeters(MeterRegistry registry, Tags t, Duration[] latencyBuckets, Duration[] stepBuckets) {
        this.registry = registry;
        this.tags = t;
        active = GaugeState.adder(registry, CONNECTIONS_ACTIVE, t, "Established RDMA connections", null);
        outstanding = GaugeState.adder(registry, OUTSTANDING, t,
                "Posted work requests (sends, receives, RDMA operations) not yet completed", null);
        multicastGroups = GaugeState.adder(registry, MULTICAST_GROUPS, t, "Multicast groups joined", null);

        for (int server = 0; server < 2; server++) {
            connectOk[server] = attemptCounter(server == 1, RdmaTags.SUCCESS, NONE);
            connectCancelled[server] = attemptCounter(server == 1, RdmaTags.CANCELLED, NONE);
            connectFailureOther[server] = attemptCounter(server == 1, RdmaTags.FAILURE, OTHER);
        }
        for (Step s : Step.values()) {
            if (s == Step.TRANSFER) {
                continue; // an established connection is not a step that finishes
            }
            steps[s.ordinal()] = Timer.builder(CONNECT_STEP)
                    .description("Duration of one successful step of establishing or closing a connection")
                    .tags(t).tag(RdmaTags.STEP, s.name().toLowerCase(Locale.ROOT))
                    .serviceLevelObjectives(stepBuckets)
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
                    .tags(t).tag(RdmaTags.OP, OPERATIONS[i])
                    .serviceLevelObjectives(latencyBuckets)
                    .register(registry);
        }
        for (WcStatus s : WcStatus.values()) {
            if (s == WcStatus.SUCCESS) {
                continue;
            }
            completionErrors[s.ordinal()] = Counter.builder(COMPLETION_ERRORS)
                    .description("Work completions that failed, by status")
                    .tags(t).tag(RdmaTags.STATUS, s.name().toLowerCase(Locale.ROOT))
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
            multicastDrops.put(reason, Counter.builder(MULTICAST_DROPPED)
                    .description("Multicast datagrams dropped, by reason").tags(t).tag(RdmaTags.REASON, reason)
                    .register(registry));
        }
    }

    private Counter attemptCounter(boolean server, String outcome, String error) {
        return Counter.builder(server ? ACCEPTS : CONNECTS)
                .description(server ? "Accepted connection requests, by outcome and error"
                        : "Client connection attempts, by outcome and error")
                .tags(tags).tag(RdmaTags.OUTCOME, outcome).tag(RdmaTags.ERROR, error)
                .register(registry);
    }

    /** Failures are rare: a map lookup is fine here, and the first failure of a kind registers its counter. */
    Counter failureCounter(boolean server, String error) {
        String c = error == null || error.isEmpty() ? UNKNOWN : error;
        String key = (server ? "a:" : "c:") + c;
        Counter counter = connectFailures.get(key);
        if (counter != null) {
            return counter;
        }
        synchronized (connectFailures) {
            counter = connectFailures.get(key);
            if (counter == null) {
                if (connectFailures.size() >= MAX_ERRORS) {
                    return connectFailureOther[server ? 1 : 0];
                }
                counter = attemptCounter(server, RdmaTags.FAILURE, c);
                connectFailures.put(key, counter);
            }
            return counter;
        }
    }

    /** {@return the drop counter of a reason: {@code overflow}, {@code error}, else {@code other}} */
    Counter dropCounter(String reason) {
        Counter c = reason == null ? null : multicastDrops.get(reason);
        return c != null ? c : multicastDrops.get(OTHER);
    }
}
