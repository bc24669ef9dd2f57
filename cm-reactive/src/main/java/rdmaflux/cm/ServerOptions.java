package rdmaflux.cm;

import java.util.Optional;

/**
 * Immutable options of a listening {@link RdmaServer} (what every accepted connection uses is its
 * {@link ConnectionOptions}): start from {@link #defaults()} or {@link #builder()}, derive with
 * {@link #toBuilder()}.
 *
 * <p><b>The accept queue.</b> A server holds at most {@link #acceptQueue()} connect requests at a time:
 * the ones its {@link AcceptFilter} is deciding, the ones being accepted (a queue pair and its buffers
 * already allocated, waiting for the handshake to finish), and the established connections that the
 * {@link RdmaServer#connections()} subscriber has not requested yet. A request is counted from its
 * arrival until the subscriber receives its connection, or, when it ends without one (rejected by the
 * filter, failed, cancelled by its client), until everything allocated for it is freed: so the queue bounds
 * the server's memory, beyond what the application holds. The subscriber's demand is the backpressure: a subscriber
 * that requests slowly leaves its connections counted, the queue fills, and then every further connect
 * request is <b>rejected at once</b>, on the connection manager thread, before the filter runs and
 * before anything is allocated for it. Its client fails fast with {@link RdmaCmException.Rejected}
 * (reason {@link RdmaCmException.Rejected#CONSUMER_REJECT}) whose private data starts with
 * {@link #ACCEPT_QUEUE_FULL} ({@link RdmaCmException.Rejected#isAcceptQueueFull()}), a rejection that
 * {@link RdmaCmException#isRetryable()} calls transient. The queue length is also the listen backlog
 * ({@code rdma_listen}), which bounds the connect requests the kernel holds for the server before its
 * thread reads them (the kernel caps it at {@code net.rdma_ucm.max_backlog}, 1024 by default).
 *
 * <p>Threads: any; immutable.
 */
public final class ServerOptions {
    /** The default {@link #acceptQueue()}. */
    public static final int DEFAULT_ACCEPT_QUEUE = 128;

    /** The largest {@link #acceptQueue()}. */
    public static final int MAX_ACCEPT_QUEUE = 65_535;

    /**
     * The start of the private data of a rejection by a full accept queue: ASCII {@code "RFX1FULL"}
     * (a string, as arrays cannot be constants).
     */
    public static final String ACCEPT_QUEUE_FULL = "RFX1FULL";

    /**
     * The start of the private data of a rejection of a request that carried no hello this server speaks
     * (a client with {@link ConnectionOptions.Protocol#RAW}, a plain verbs client, an rdmaflux of another
     * hello version): ASCII {@code "RFX1HELO"}, then a line of ASCII text saying what to do
     * ({@link RdmaCmException.Rejected#isProtocolMismatch()}). Only a server with the default
     * {@link ConnectionOptions.Protocol#CREDITS} sends it.
     */
    public static final String HELLO_REFUSED = "RFX1HELO";

    private static final ServerOptions DEFAULTS = new Builder().build();

    private final int acceptQueue;
    private final SharedReceivePool sharedReceivePool;

    private ServerOptions(Builder b) {
        acceptQueue = b.acceptQueue;
        sharedReceivePool = b.sharedReceivePool;
    }

    /** {@return the default options} */
    public static ServerOptions defaults() {
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

    /**
     * {@return the most connect requests held at once: being decided or accepted, plus established
     * connections not yet taken by the {@link RdmaServer#connections()} subscriber; also the listen backlog;
     * {@value #DEFAULT_ACCEPT_QUEUE} by default}
     */
    public int acceptQueue() {
        return acceptQueue;
    }

    /**
     * {@return the shared receive pool the accepted connections receive into, or empty (the default):
     * each connection posts its own receive buffers}
     *
     * <p>With a pool, the accepted connections receive into buffers shared by all of them (one SRQ per
     * device), in place of {@link ConnectionOptions#receiveBuffers()} buffers each; see
     * {@link SharedReceivePool}. Only with {@link ConnectionOptions.Protocol#CREDITS}, checked when the
     * server binds.
     */
    public Optional<SharedReceivePool> sharedReceivePool() {
        return Optional.ofNullable(sharedReceivePool);
    }

    @Override
    public String toString() {
        return "ServerOptions[acceptQueue=" + acceptQueue
                + (sharedReceivePool == null ? "" : ", sharedReceivePool=" + sharedReceivePool) + "]";
    }

    /**
     * Builds {@link ServerOptions}. Each setter checks its value at once: a value it does not allow throws
     * {@link IllegalArgumentException}, whose message names the option and what it allows.
     *
     * <p>Threads: one at a time; not thread-safe.
     */
    public static final class Builder {
        private int acceptQueue = DEFAULT_ACCEPT_QUEUE;
        private SharedReceivePool sharedReceivePool;

        private Builder() {
        }

        private Builder(ServerOptions o) {
            acceptQueue = o.acceptQueue;
            sharedReceivePool = o.sharedReceivePool;
        }

        /**
         * Sets {@link ServerOptions#acceptQueue()}.
         *
         * @param requests 1..{@value ServerOptions#MAX_ACCEPT_QUEUE}
         * @return this
         */
        public Builder acceptQueue(int requests) {
            acceptQueue = OptionChecks.range("acceptQueue", requests, 1, MAX_ACCEPT_QUEUE);
            return this;
        }

        /**
         * Sets {@link ServerOptions#sharedReceivePool()}.
         *
         * @param pool the pool's options, or {@code null} for none
         * @return this
         */
        public Builder sharedReceivePool(SharedReceivePool pool) {
            sharedReceivePool = pool;
            return this;
        }

        /** {@return the options} */
        public ServerOptions build() {
            return new ServerOptions(this);
        }
    }
}
