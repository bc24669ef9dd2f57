package rdmaflux.cm.internal.lifecycle;

import java.time.Duration;

/**
 * How long one rdma_resolve_addr of a connect may take. The kernel probes the neighbour (ARP) when a
 * request starts and, when no probe was answered, waits out the request's whole timeout before it reports
 * ADDR_ERROR (ETIMEDOUT); it tries again early only when the neighbour becomes reachable. An attempt as
 * long as the {@link rdmaflux.cm.Step#ADDRESS} step would let one lost exchange fail the connect. So
 * each attempt lasts at most {@link #ATTEMPT}; one that times out is made again while the step lasts
 * ({@link ConnectionStateMachine}'s ADDR_ERROR rule), and each new attempt probes afresh.
 */
final class AddressAttempt {
    /** The kernel's interval between neighbour probes, by default: an attempt spans at most one of them. */
    static final Duration ATTEMPT = Duration.ofSeconds(1);
    /**
     * The least an attempt is given: at the end of the step its timer ends the step, and an attempt cut to
     * nothing would only race it.
     */
    static final Duration LEAST = Duration.ofMillis(100);

    private AddressAttempt() {
    }

    /**
     * The timeout of the next attempt.
     *
     * @param step the step's timeout, or {@code null} for none
     * @param elapsedNanos how long the step has run
     * @return at most {@link #ATTEMPT}, no more than what is left of the step, and at least {@link #LEAST}
     */
    static Duration timeout(Duration step, long elapsedNanos) {
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
