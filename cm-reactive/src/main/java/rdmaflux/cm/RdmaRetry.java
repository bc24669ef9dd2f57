package rdmaflux.cm;

import java.time.Duration;

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
 * <p>Which failures are retried is {@link RdmaCmException#isRetryable()}. Each attempt is a new connect
 * with all its resources; a failed attempt frees them before the next one starts.
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
     * @return whether it is an {@link RdmaCmException} that {@linkplain RdmaCmException#isRetryable() may pass}
     */
    public static boolean isRetryable(Throwable failure) {
        return failure instanceof RdmaCmException e && e.isRetryable();
    }
}
