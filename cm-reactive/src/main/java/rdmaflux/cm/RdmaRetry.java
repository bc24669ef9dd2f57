package rdmaflux.cm;

import java.time.Duration;

import rdmaflux.verbs.RdmaNoDeviceException;
import reactor.util.retry.Retry;
import reactor.util.retry.RetryBackoffSpec;

/**
 * Connecting again after a transient failure, for {@code retryWhen}: a client whose server restarts
 * (or whose route comes back) reconnects once the server listens again, while a decision such as the
 * server's accept filter saying no fails at once.
 *
 * <pre>{@code
 * RdmaConnection.connect(address).retryWhen(RdmaRetry.reconnect(20, Duration.ofMillis(200)))
 * }</pre>
 *
 * <p>Which failures are retried is {@link RdmaCmException#isRetryable()}, and {@link RdmaNoDeviceException}: no
 * RDMA device serves the address now (its device was removed and has not come back yet, or is still being
 * added), so a client reconnects across a device's removal and return. On a machine with no RDMA device at all
 * the attempts run out and the last failure, that exception, says so. Each attempt is a new connect with all
 * its resources; a failed attempt frees them before the next one starts.
 */
public final class RdmaRetry {
    private RdmaRetry() {
    }

    /**
     * Exponential backoff (with Reactor's default jitter) over retryable connect failures.
     *
     * @param maxAttempts retries after the first attempt
     * @param firstBackoff the wait before the first retry; it doubles per retry
     * @return the spec; tune it further (e.g. {@code maxBackoff}) as with any {@link Retry#backoff}
     */
    public static RetryBackoffSpec reconnect(long maxAttempts, Duration firstBackoff) {
        return Retry.backoff(maxAttempts, firstBackoff).filter(RdmaRetry::isRetryable);
    }

    /**
     * Whether a failure is worth connecting again for.
     *
     * @param failure what a connect failed with
     * @return whether it is an {@link RdmaCmException} that {@linkplain RdmaCmException#isRetryable() may pass},
     *         or an {@link RdmaNoDeviceException}
     */
    public static boolean isRetryable(Throwable failure) {
        return failure instanceof RdmaCmException e && e.isRetryable() || failure instanceof RdmaNoDeviceException;
    }
}
