package rdmaflux.samples.bench;

import java.net.InetSocketAddress;
import java.time.Duration;

import rdmaflux.cm.ConnectionOptions;

/**
 * The reactive send/recv ping-pong of {@link ReactiveLatency} with both connections busy polling
 * ({@link ConnectionOptions.Builder#busyPoll}: the completion loop keeps polling the CQ instead of arming
 * it and sleeping) and the calling thread spinning for each echo, for comparison with the verbs layer's
 * spin ping-pong (spin-wait hint on) of the same run. Default options otherwise: signals on Reactor's
 * parallel scheduler, credits, an echo server in this process.
 */
final class ReactiveBusyPoll {
    /** How long a loop keeps polling after the last completion: longer than any gap of the ping-pong. */
    static final Duration SPIN = Duration.ofSeconds(1);

    private ReactiveBusyPoll() {
    }

    /** {@return the options of both sides: {@link ReactiveLatency}'s, busy polling for {@link #SPIN}} */
    static ConnectionOptions options(int size) {
        return ReactiveLatency.options(size).toBuilder().busyPoll(SPIN).build();
    }

    /**
     * Ping-pong against a busy-polling echo server in this process.
     *
     * @param address the RDMA interface's address (port 0: any)
     * @param size message size
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @param timeout the longest wait for any step or echo
     * @return timestamps and the heap bytes all threads allocated per message while timed
     */
    static VerbsTests.Latency run(InetSocketAddress address, int size, int warmup, int iters, Duration timeout) {
        ConnectionOptions options = options(size);
        try (ReactiveLatency.Echo echo = new ReactiveLatency.Echo(address, options, timeout)) {
            return ReactiveLatency.pingPong(echo.address(), size, warmup, iters, timeout, options, true);
        }
    }
}
