package rdmaflux.cm.internal.util;

import java.time.Duration;

/**
 * How long one rdma_resolve_addr may take, for a connect or a datagram peer's resolve. The kernel probes
 * the neighbour (ARP) when a request starts and, when no probe was answered, waits out the request's whole
 * timeout before it reports ADDR_ERROR (ETIMEDOUT); it tries again early only when the neighbour becomes
 * reachable. An attempt as long as the address step would let one lost exchange fail it. So each attempt
 * lasts at most {@link #ATTEMPT}; one that times out is made again while the step lasts (a connection's
 * state machine's ADDR_ERROR rule, a resolve's own), and each new attempt probes afresh.
 */
public final class AddressAttempt {
    /** The kernel's interval between neighbour probes, by default: an attempt spans at most one of them. */
    public static final Duration ATTEMPT = Duration.ofSeconds(1);
    /**
     * The least an attempt is given: at the end of the step its timer ends the step, and an attempt cut to
     * nothing would only race it.
     */
    public static final Duration LEAST = Duration.ofMillis(100);

    private AddressAttempt() {
    }

    /**
     * The timeout of the next attempt.
     *
     * @param step the step's timeout, or {@code null} for none
     * @param elapsedNanos how long the step has run
     * @return at most {@link #ATTEMPT}, no more than what is left of the step, and at least {@link #LEAST}
     */
    public static Duration timeout(Duration step, long elapsedNanos) {
        if (step == null) {
            return ATTEMPT;
        }
        Duration left = step.minusNanos(elapsedNanos);
        if (left.compareTo(LEAST) < 0) {
            return LEAST;
        }
        return left.compareTo(ATTEMPT) < 0 ? left : ATTEMPT;
    }
}
