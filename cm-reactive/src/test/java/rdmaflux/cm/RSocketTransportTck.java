package rdmaflux.cm;

import io.rsocket.test.TransportTest;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import rdmaflux.cm.rsocket.RdmaClientTransport;
import rdmaflux.cm.rsocket.RdmaCloseableServer;
import rdmaflux.cm.rsocket.RdmaServerTransport;
import rdmaflux.testing.RdmaTestEnv;

/**
 * rsocket-java's own transport compatibility kit ({@code io.rsocket.test.TransportTest} from
 * {@code io.rsocket:rsocket-test}), unmodified, bound to the RDMA transport. Not in the lanes of
 * {@code scripts/test} (its name does not end in IT): {@code scripts/tck} runs it in a VM with one emulated
 * CPU, where a thread wake-up does not wait for qemu to switch CPUs, and {@code scripts/tck --slow} adds
 * rsocket-java's {@code @SlowTest}, {@code requestChannel2_000_000}; see docs/rsocket.md. The transports
 * keep their default options but for the connection steps' timeouts, raised because
 * on one emulated CPU a JVM compiling with C2 may take longer than the default 10 seconds to connect. Its
 * test methods run on a thread at the lowest CPU priority ({@link LowPriorityTestThread}), because the
 * kit's verifiers wait by polling.
 */
@Timeout(value = 4, unit = TimeUnit.HOURS) // the kit's own timeouts (getTimeout) bound each step
@ExtendWith(LowPriorityTestThread.class) // the kit's verifiers poll without sleeping: see there
class RSocketTransportTck implements TransportTest {
    private final TransportPair<InetSocketAddress, RdmaCloseableServer> pair = pair(false);

    /**
     * The kit's client and server over the RDMA transport, connected (the kit's constructor binds and connects).
     *
     * @param resumable whether both sides resume sessions, over connections the kit cuts at random
     *                  ({@link RSocketResumableTransportTck})
     * @return the pair
     */
    static TransportPair<InetSocketAddress, RdmaCloseableServer> pair(boolean resumable) {
        return new TransportPair<>(
                () -> new InetSocketAddress(RdmaTestEnv.address(), 0),
                (address, server, alloc) -> RdmaClientTransport.create(server.address(), SLOW_SETUP.apply(
                        RdmaClientTransport.defaultOptions())).allocator(alloc),
                (address, alloc) -> RdmaServerTransport.create(address, SLOW_SETUP.apply(
                        RdmaServerTransport.defaultOptions()), AcceptFilter.ACCEPT_ALL).allocator(alloc),
                false, resumable);
    }

    /** Longer connection steps: the emulator's JIT may take the one CPU for seconds at the start. */
    private static final java.util.function.UnaryOperator<ConnectionOptions> SLOW_SETUP = o -> o.toBuilder()
            .timeout(Step.CONNECT, Duration.ofMinutes(2)).timeout(Step.ACCEPT, Duration.ofMinutes(2))
            .timeout(Step.ADDRESS, Duration.ofMinutes(1)).timeout(Step.ROUTE, Duration.ofMinutes(1)).build();

    /**
     * The kit's bound on each of its steps: 10 minutes, or {@code -Drdmaflux.tck.timeout} (an ISO-8601 duration;
     * {@code scripts/tck --slow} sets 150 minutes for {@code requestChannel2_000_000}).
     *
     * @return the bound
     */
    static Duration kitTimeout() {
        return Duration.parse(System.getProperty("rdmaflux.tck.timeout", "PT10M"));
    }

    @Override
    public Duration getTimeout() {
        return kitTimeout();
    }

    @Override
    public TransportPair getTransportPair() {
        return pair;
    }
}
