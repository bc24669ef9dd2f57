package rdmaflux.samples.bench;

import java.net.InetSocketAddress;
import java.time.Duration;

import reactor.core.scheduler.Schedulers;
import rdmaflux.cm.ConnectionOptions;

/**
 * The reactive send/recv ping-pong of {@link ReactiveLatency} with both connections busy polling
 * ({@link ConnectionOptions.Builder#busyPoll}: the completion loop keeps polling the CQ instead of arming
 * it and sleeping) and the calling thread spinning for each echo, for comparison with the verbs layer's
 * spin ping-pong (spin-wait hint on) of the same run.
 *
 * <p>Configured as a busy-poll user would: signals are delivered on the completion loop that polled them
 * ({@link ConnectionOptions.Builder#scheduler} {@code Schedulers.immediate()}, as netty runs handlers on
 * its event loop), so no thread but the spinning loop and the caller has to run for a round trip; the
 * echo server's handler runs there too and does not block. Both connections share one spinning loop
 * (the library puts busy-polling connections together). Default options otherwise: credits, an echo
 * server in this process.
 */
final class ReactiveBusyPoll implements AutoCloseable {
    /** How long a loop keeps polling after the last completion: longer than any gap of the ping-pong. */
    static final Duration SPIN = Duration.ofSeconds(1);

    private final int size;
    private final ReactiveLatency.Echo echo;
    private final ReactiveLatency.Client client;

    /**
     * Starts the echo server in this process and connects to it; the warm-up rounds and the timed runs
     * then share the connection, as the verbs spin ping-pong shares its link (no connection setup, and
     * none of the JIT compiling it, between or during them).
     *
     * @param address the RDMA interface's address (port 0: any)
     * @param size message size
     * @param timeout the longest wait for any step or echo
     */
    ReactiveBusyPoll(InetSocketAddress address, int size, Duration timeout) {
        this.size = size;
        ConnectionOptions options = options(size);
        echo = new ReactiveLatency.Echo(address, options, timeout);
        try {
            client = new ReactiveLatency.Client(echo.address(), options, timeout);
        } catch (RuntimeException e) {
            echo.close();
            throw e;
        }
    }

    /**
     * {@return the options of both sides: {@link ReactiveLatency}'s, busy polling for {@link #SPIN},
     * signals on the completion loop}
     */
    static ConnectionOptions options(int size) {
        return ReactiveLatency.options(size).toBuilder().busyPoll(SPIN).scheduler(Schedulers.immediate()).build();
    }

    /**
     * One ping-pong on the shared connection, the calling thread spinning for each echo.
     *
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @return timestamps and the heap bytes all threads allocated per message while timed
     */
    VerbsTests.Latency run(int warmup, int iters) {
        return client.pingPong(size, warmup, iters, true);
    }

    @Override
    public void close() {
        try {
            client.close();
        } finally {
            echo.close();
        }
    }
}
