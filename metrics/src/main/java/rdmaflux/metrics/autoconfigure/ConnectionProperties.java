package rdmaflux.metrics.autoconfigure;

import java.time.Duration;

import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.util.unit.DataSize;

import rdmaflux.cm.ConnectionOptions;

/**
 * {@code rdmaflux.connection.*}: what an application tunes of {@link ConnectionOptions}. A property left
 * unset keeps the value of the options it is {@linkplain #applyTo applied to}. Options that are not
 * values (scheduler, recorder, loops, large-message memory, private data) are set in code with a
 * {@link ConnectionOptionsCustomizer} bean.
 */
public class ConnectionProperties {
    /** Receive buffers posted per connection: the credits granted to the peer (32 by default). */
    private Integer receiveBuffers;

    /** Registered send buffers per connection: sends in flight (32 by default). */
    private Integer sendBuffers;

    /** Size of each send and receive buffer, the largest message sent without the large-message path (8KB by default). */
    private DataSize bufferSize;

    /** Send queue depth: sends, RDMA operations and control messages in flight (128 by default). */
    private Integer sendQueueDepth;

    /** Largest payload sent inline (64B by default). */
    private DataSize maxInlineData;

    /** Transport retries 0..7 before a silent peer fails the connection (6 by default; 7 retries forever on Soft-RoCE). */
    private Integer retryCount;

    /** Receiver-not-ready retries 0..7, 7 = forever (7 by default). */
    private Integer rnrRetryCount;

    /** RDMA reads and atomics this side keeps in flight, 0..254, or -1 for the device's maximum (the default). */
    private Integer initiatorDepth;

    /** RDMA reads and atomics from the peer accepted in flight, 0..254, or -1 for the device's maximum (the default). */
    private Integer responderResources;

    /** Local ACK timeout exponent 0..31 (4.096 us x 2^n, 0 = infinite), or -1 for the device's default (17 by default). */
    private Integer ackTimeout;

    /** Type of service byte 0..255 of a client's traffic, or -1 for the device's default (the default). */
    private Integer typeOfService;

    /** How the two sides talk: CREDITS (rdmaflux on both ends, the default) or RAW (plain SENDs, for peers that are not rdmaflux). */
    private ConnectionOptions.Protocol protocol;

    /** How completions are waited for: EVENT_DRIVEN (the default) or BUSY_POLL (spin for busy-poll before sleeping). */
    private ConnectionOptions.CompletionMode completionMode;

    /** How long to spin on the completion queue before sleeping (1ms by default); setting it switches to BUSY_POLL unless completion-mode is set too. */
    private Duration busyPoll;

    /** Whether connections share the completion queues of their completion loop on their device (true by default). */
    private Boolean sharedCompletionQueue;

    /** Idle time after which a connection probes its peer; 0 turns keepalive off (4s by default). */
    private Duration keepalive;

    /** Bytes of large messages in flight per connection and side (64MB by default). */
    private DataSize largeMessageBudget;

    /** Largest message accepted from the peer (no limit beyond the protocol's by default); set it on servers facing untrusted peers. */
    private DataSize maxInboundMessageSize;

    /** What an established connection does when its port goes down: WAIT for the transport's retries (the default) or FAIL at once. */
    private ConnectionOptions.PortDownPolicy portDownPolicy;

    /** Whether received messages are the receive buffers' own, reused objects (true by default: no allocation per message). */
    private Boolean recycledMessages;

    @NestedConfigurationProperty
    private final ConnectionTimeouts timeouts = new ConnectionTimeouts();

    /** Creates the properties, every one unset. */
    public ConnectionProperties() {
    }

    /** {@return receive buffers posted per connection: the credits granted to the peer (32 by default), or null when unset} */
    public Integer getReceiveBuffers() {
        return receiveBuffers;
    }

    /**
     * Sets {@code rdmaflux.connection.receive-buffers}.
     *
     * @param receiveBuffers the value, or null to keep the options' own
     */
    public void setReceiveBuffers(Integer receiveBuffers) {
        this.receiveBuffers = receiveBuffers;
    }

    /** {@return registered send buffers per connection: sends in flight (32 by default), or null when unset} */
    public Integer getSendBuffers() {
        return sendBuffers;
    }

    /**
     * Sets {@code rdmaflux.connection.send-buffers}.
     *
     * @param sendBuffers the value, or null to keep the options' own
     */
    public void setSendBuffers(Integer sendBuffers) {
        this.sendBuffers = sendBuffers;
    }

    /** {@return size of each send and receive buffer, the largest message sent without the large-message path (8KB by default), or null when unset} */
    public DataSize getBufferSize() {
        return bufferSize;
    }

    /**
     * Sets {@code rdmaflux.connection.buffer-size}.
     *
     * @param bufferSize the value, or null to keep the options' own
     */
    public void setBufferSize(DataSize bufferSize) {
        this.bufferSize = bufferSize;
    }

    /** {@return send queue depth: sends, RDMA operations and control messages in flight (128 by default), or null when unset} */
    public Integer getSendQueueDepth() {
        return sendQueueDepth;
    }

    /**
     * Sets {@code rdmaflux.connection.send-queue-depth}.
     *
     * @param sendQueueDepth the value, or null to keep the options' own
     */
    public void setSendQueueDepth(Integer sendQueueDepth) {
        this.sendQueueDepth = sendQueueDepth;
    }

    /** {@return largest payload sent inline (64B by default), or null when unset} */
    public DataSize getMaxInlineData() {
        return maxInlineData;
    }

    /**
     * Sets {@code rdmaflux.connection.max-inline-data}.
     *
     * @param maxInlineData the value, or null to keep the options' own
     */
    public void setMaxInlineData(DataSize maxInlineData) {
        this.maxInlineData = maxInlineData;
    }

    /** {@return transport retries 0..7 before a silent peer fails the connection (6 by default; 7 retries forever on Soft-RoCE), or null when unset} */
    public Integer getRetryCount() {
        return retryCount;
    }

    /**
     * Sets {@code rdmaflux.connection.retry-count}.
     *
     * @param retryCount the value, or null to keep the options' own
     */
    public void setRetryCount(Integer retryCount) {
        this.retryCount = retryCount;
    }

    /** {@return receiver-not-ready retries 0..7, 7 = forever (7 by default), or null when unset} */
    public Integer getRnrRetryCount() {
        return rnrRetryCount;
    }

    /**
     * Sets {@code rdmaflux.connection.rnr-retry-count}.
     *
     * @param rnrRetryCount the value, or null to keep the options' own
     */
    public void setRnrRetryCount(Integer rnrRetryCount) {
        this.rnrRetryCount = rnrRetryCount;
    }

    /** {@return rDMA reads and atomics this side keeps in flight, 0..254, or -1 for the device's maximum (the default), or null when unset} */
    public Integer getInitiatorDepth() {
        return initiatorDepth;
    }

    /**
     * Sets {@code rdmaflux.connection.initiator-depth}.
     *
     * @param initiatorDepth the value, or null to keep the options' own
     */
    public void setInitiatorDepth(Integer initiatorDepth) {
        this.initiatorDepth = initiatorDepth;
    }

    /** {@return rDMA reads and atomics from the peer accepted in flight, 0..254, or -1 for the device's maximum (the default), or null when unset} */
    public Integer getResponderResources() {
        return responderResources;
    }

    /**
     * Sets {@code rdmaflux.connection.responder-resources}.
     *
     * @param responderResources the value, or null to keep the options' own
     */
    public void setResponderResources(Integer responderResources) {
        this.responderResources = responderResources;
    }

    /** {@return local ACK timeout exponent 0..31 (4.096 us x 2^n, 0 = infinite), or -1 for the device's default (17 by default), or null when unset} */
    public Integer getAckTimeout() {
        return ackTimeout;
    }

    /**
     * Sets {@code rdmaflux.connection.ack-timeout}.
     *
     * @param ackTimeout the value, or null to keep the options' own
     */
    public void setAckTimeout(Integer ackTimeout) {
        this.ackTimeout = ackTimeout;
    }

    /** {@return type of service byte 0..255 of a client's traffic, or -1 for the device's default (the default), or null when unset} */
    public Integer getTypeOfService() {
        return typeOfService;
    }

    /**
     * Sets {@code rdmaflux.connection.type-of-service}.
     *
     * @param typeOfService the value, or null to keep the options' own
     */
    public void setTypeOfService(Integer typeOfService) {
        this.typeOfService = typeOfService;
    }

    /** {@return how the two sides talk: CREDITS (rdmaflux on both ends, the default) or RAW (plain SENDs, for peers that are not rdmaflux), or null when unset} */
    public ConnectionOptions.Protocol getProtocol() {
        return protocol;
    }

    /**
     * Sets {@code rdmaflux.connection.protocol}.
     *
     * @param protocol the value, or null to keep the options' own
     */
    public void setProtocol(ConnectionOptions.Protocol protocol) {
        this.protocol = protocol;
    }

    /** {@return how completions are waited for: EVENT_DRIVEN (the default) or BUSY_POLL (spin for busy-poll before sleeping), or null when unset} */
    public ConnectionOptions.CompletionMode getCompletionMode() {
        return completionMode;
    }

    /**
     * Sets {@code rdmaflux.connection.completion-mode}.
     *
     * @param completionMode the value, or null to keep the options' own
     */
    public void setCompletionMode(ConnectionOptions.CompletionMode completionMode) {
        this.completionMode = completionMode;
    }

    /** {@return how long to spin on the completion queue before sleeping, in BUSY_POLL mode (1ms by default), or null when unset} */
    public Duration getBusyPoll() {
        return busyPoll;
    }

    /**
     * Sets {@code rdmaflux.connection.busy-poll}.
     *
     * @param busyPoll the value, or null to keep the options' own
     */
    public void setBusyPoll(Duration busyPoll) {
        this.busyPoll = busyPoll;
    }

    /** {@return whether connections share the completion queues of their completion loop on their device (true by default), or null when unset} */
    public Boolean getSharedCompletionQueue() {
        return sharedCompletionQueue;
    }

    /**
     * Sets {@code rdmaflux.connection.shared-completion-queue}.
     *
     * @param sharedCompletionQueue the value, or null to keep the options' own
     */
    public void setSharedCompletionQueue(Boolean sharedCompletionQueue) {
        this.sharedCompletionQueue = sharedCompletionQueue;
    }

    /** {@return idle time after which a connection probes its peer; 0 turns keepalive off (4s by default), or null when unset} */
    public Duration getKeepalive() {
        return keepalive;
    }

    /**
     * Sets {@code rdmaflux.connection.keepalive}.
     *
     * @param keepalive the value, or null to keep the options' own
     */
    public void setKeepalive(Duration keepalive) {
        this.keepalive = keepalive;
    }

    /** {@return bytes of large messages in flight per connection and side (64MB by default), or null when unset} */
    public DataSize getLargeMessageBudget() {
        return largeMessageBudget;
    }

    /**
     * Sets {@code rdmaflux.connection.large-message-budget}.
     *
     * @param largeMessageBudget the value, or null to keep the options' own
     */
    public void setLargeMessageBudget(DataSize largeMessageBudget) {
        this.largeMessageBudget = largeMessageBudget;
    }

    /** {@return largest message accepted from the peer (no limit beyond the protocol's by default); set it on servers facing untrusted peers, or null when unset} */
    public DataSize getMaxInboundMessageSize() {
        return maxInboundMessageSize;
    }

    /**
     * Sets {@code rdmaflux.connection.max-inbound-message-size}.
     *
     * @param maxInboundMessageSize the value, or null to keep the options' own
     */
    public void setMaxInboundMessageSize(DataSize maxInboundMessageSize) {
        this.maxInboundMessageSize = maxInboundMessageSize;
    }

    /** {@return what an established connection does when its port goes down: WAIT for the transport's retries (the default) or FAIL at once, or null when unset} */
    public ConnectionOptions.PortDownPolicy getPortDownPolicy() {
        return portDownPolicy;
    }

    /**
     * Sets {@code rdmaflux.connection.port-down-policy}.
     *
     * @param portDownPolicy the value, or null to keep the options' own
     */
    public void setPortDownPolicy(ConnectionOptions.PortDownPolicy portDownPolicy) {
        this.portDownPolicy = portDownPolicy;
    }

    /** {@return whether received messages are the receive buffers' own, reused objects (true by default: no allocation per message), or null when unset} */
    public Boolean getRecycledMessages() {
        return recycledMessages;
    }

    /**
     * Sets {@code rdmaflux.connection.recycled-messages}.
     *
     * @param recycledMessages the value, or null to keep the options' own
     */
    public void setRecycledMessages(Boolean recycledMessages) {
        this.recycledMessages = recycledMessages;
    }

    /** {@return the per-step timeouts: {@code rdmaflux.connection.timeouts.*}} */
    public ConnectionTimeouts getTimeouts() {
        return timeouts;
    }

    /**
     * Applies the properties that are set to a builder.
     *
     * @param b the builder of the options they change
     * @return {@code b}
     * @throws IllegalArgumentException when a size does not fit the option
     */
    public ConnectionOptions.Builder applyTo(ConnectionOptions.Builder b) {
        if (receiveBuffers != null) {
            b.receiveBuffers(receiveBuffers);
        }
        if (sendBuffers != null) {
            b.sendBuffers(sendBuffers);
        }
        if (bufferSize != null) {
            b.bufferSize(bytes("buffer-size", bufferSize));
        }
        if (sendQueueDepth != null) {
            b.sendQueueDepth(sendQueueDepth);
        }
        if (maxInlineData != null) {
            b.maxInlineData(bytes("max-inline-data", maxInlineData));
        }
        if (retryCount != null) {
            b.retryCount(retryCount);
        }
        if (rnrRetryCount != null) {
            b.rnrRetryCount(rnrRetryCount);
        }
        if (initiatorDepth != null) {
            b.initiatorDepth(initiatorDepth);
        }
        if (responderResources != null) {
            b.responderResources(responderResources);
        }
        if (ackTimeout != null) {
            b.ackTimeout(ackTimeout);
        }
        if (typeOfService != null) {
            b.typeOfService(typeOfService);
        }
        if (protocol != null) {
            b.protocol(protocol);
        }
        if (busyPoll != null) {
            b.busyPoll(busyPoll); // switches to BUSY_POLL; completion-mode, when set, decides
        }
        if (completionMode != null) {
            b.completionMode(completionMode);
        }
        if (sharedCompletionQueue != null) {
            b.sharedCompletionQueue(sharedCompletionQueue);
        }
        if (keepalive != null) {
            b.keepalive(keepalive);
        }
        if (largeMessageBudget != null) {
            b.largeMessageBudget(largeMessageBudget.toBytes());
        }
        if (maxInboundMessageSize != null) {
            b.maxInboundMessageSize(bytes("max-inbound-message-size", maxInboundMessageSize));
        }
        if (portDownPolicy != null) {
            b.portDownPolicy(portDownPolicy);
        }
        if (recycledMessages != null) {
            b.recycledMessages(recycledMessages);
        }
        timeouts.applyTo(b);
        return b;
    }

    private static int bytes(String property, DataSize size) {
        long n = size.toBytes();
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rdmaflux.connection." + property + " is at most 2GB - 1, got " + size);
        }
        return (int) n;
    }
}
