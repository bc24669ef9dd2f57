package rdmaflux.cm;

/**
 * Immutable options of a listening {@link RdmaServer} (what every accepted connection uses is its
 * {@link ConnectionOptions}); start from {@link #defaults()} and derive with the {@code with...} methods.
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

    private static final ServerOptions DEFAULTS = new ServerOptions(DEFAULT_ACCEPT_QUEUE, null);

    private final int acceptQueue;
    private final SharedReceivePool sharedReceivePool;

    private ServerOptions(int acceptQueue, SharedReceivePool sharedReceivePool) {
        if (acceptQueue < 1 || acceptQueue > MAX_ACCEPT_QUEUE) {
            throw new IllegalArgumentException("acceptQueue must be 1.." + MAX_ACCEPT_QUEUE + ", got " + acceptQueue);
        }
        this.acceptQueue = acceptQueue;
        this.sharedReceivePool = sharedReceivePool;
    }

    /** {@return the default options: an accept queue of {@value #DEFAULT_ACCEPT_QUEUE}} */
    public static ServerOptions defaults() {
        return DEFAULTS;
    }

    /**
     * {@return the most connect requests held at once: being decided or accepted, plus established
     * connections not yet taken by the {@link RdmaServer#connections()} subscriber; also the listen backlog}
     */
    public int acceptQueue() {
        return acceptQueue;
    }

    /**
     * Sets the accept queue.
     *
     * @param requests the most connect requests held at once (1..{@value #MAX_ACCEPT_QUEUE})
     * @return options with that accept queue
     * @throws IllegalArgumentException when {@code requests} is out of range
     */
    public ServerOptions withAcceptQueue(int requests) {
        return new ServerOptions(requests, sharedReceivePool);
    }

    /**
     * {@return the shared receive pool the accepted connections receive into, or empty (the default):
     * each connection posts its own receive buffers}
     */
    public java.util.Optional<SharedReceivePool> sharedReceivePool() {
        return java.util.Optional.ofNullable(sharedReceivePool);
    }

    /**
     * Makes the accepted connections receive into a pool shared by all of them (one SRQ per device), in
     * place of {@link ConnectionOptions#receiveBuffers()} buffers each; see {@link SharedReceivePool}.
     * Only with {@link ConnectionOptions.Protocol#CREDITS}, checked when the server binds.
     *
     * @param pool the pool's options, or {@code null} for none
     * @return options with that pool
     */
    public ServerOptions withSharedReceivePool(SharedReceivePool pool) {
        return new ServerOptions(acceptQueue, pool);
    }

    @Override
    public String toString() {
        return "ServerOptions[acceptQueue=" + acceptQueue
                + (sharedReceivePool == null ? "" : ", sharedReceivePool=" + sharedReceivePool) + "]";
    }
}
