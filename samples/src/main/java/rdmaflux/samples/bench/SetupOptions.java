package rdmaflux.samples.bench;

import java.time.Duration;

import rdmaflux.cm.ConnectionOptions;
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

    /** {@return the options as the row's note says them} */
    static String describe() {
        return BUFFERS + " receive and " + BUFFERS + " send buffers of " + BUFFER_SIZE + " B, send queue 8, "
                + "keepalive off";
    }
}
