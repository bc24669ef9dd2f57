package rdmaflux.samples.bench;

import java.time.Duration;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.SharedReceivePool;
import rdmaflux.cm.Step;

/**
 * The connection options of both sides of the reactive connection setup row: the client's
 * ({@link ReactiveSetup}) and the server's ({@link SetupServer}).
 */
final class SetupOptions {
    /** Bytes of each buffer: the hello and small messages fit, so memory stays small for 1,000 connections. */
    static final int BUFFER_SIZE = 256;
    /** Receive and send buffers per connection. */
    static final int BUFFERS = 4;

    private SetupOptions() {
    }

    /**
     * The options of both sides: {@value #BUFFERS} receive and send buffers of {@value #BUFFER_SIZE}
     * bytes, a send queue of 8, so N connections pin a few KiB each (page-rounded registrations) instead
     * of the defaults' half MiB; generous step timeouts, because N handshakes queue on the emulated CPUs;
     * keepalive off, so N idle connections do not probe each other while the run waits.
     */
    static ConnectionOptions options() {
        return ConnectionOptions.builder().bufferSize(BUFFER_SIZE).receiveBuffers(BUFFERS)
                .sendBuffers(BUFFERS).sendQueueDepth(8).keepalive(Duration.ZERO)
                .timeout(Step.ADDRESS, Duration.ofSeconds(60)).timeout(Step.ROUTE, Duration.ofSeconds(60))
                .timeout(Step.CONNECT, Duration.ofSeconds(120)).timeout(Step.ACCEPT, Duration.ofSeconds(120))
                .build();
    }

    /** Bytes of each buffer of the server at scale ({@link #pooled()}): a realistic size, not the smallest. */
    static final int POOLED_BUFFER_SIZE = 4096;
    /** Send buffers of each of its connections (each still has its own). */
    static final int POOLED_SEND_BUFFERS = 2;
    /** Credits each of its connections grants from the pool. */
    static final int POOL_QUOTA = 2;
    /** Buffers of its pool lent to busy connections, and the most one may have lent at once. */
    static final int POOL_RESERVE = 1_024;
    static final int POOL_LOAN_CAP = 8;

    /**
     * The server's options at scale ({@link ScaleRows}): {@value #POOLED_BUFFER_SIZE}-byte buffers,
     * {@value #POOLED_SEND_BUFFERS} send buffers, receiving into a shared receive pool ({@link #pool}), with
     * the generous timeouts and no keepalive of {@link #options()}.
     */
    static ConnectionOptions pooled() {
        return options().toBuilder().bufferSize(POOLED_BUFFER_SIZE).sendBuffers(POOLED_SEND_BUFFERS).build();
    }

    /**
     * {@return the shared receive pool of a server for {@code connections}: each one's quota and its 3
     * control buffers, a reserve, and 100 spare}
     *
     * @param connections how many the server holds at once
     */
    static SharedReceivePool pool(int connections) {
        return SharedReceivePool.of(connections * (POOL_QUOTA + 3) + POOL_RESERVE + 100, POOL_QUOTA)
                .withReserve(POOL_RESERVE, POOL_LOAN_CAP);
    }

    /** {@return the server's options at scale as a row's note says them} */
    static String describePooled(int connections) {
        SharedReceivePool p = pool(connections);
        return "a shared receive pool of " + p.buffers() + " buffers of " + POOLED_BUFFER_SIZE / 1024 + " KiB (quota "
                + POOL_QUOTA + " a connection, reserve " + POOL_RESERVE + "), " + POOLED_SEND_BUFFERS
                + " send buffers of " + POOLED_BUFFER_SIZE / 1024 + " KiB a connection, keepalive off";
    }

    /** {@return the options as the row's note says them} */
    static String describe() {
        return BUFFERS + " receive and " + BUFFERS + " send buffers of " + BUFFER_SIZE + " B, send queue 8, "
                + "keepalive off";
    }
}
