package rdmaflux.cm;

import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.WcStatus;

/**
 * Receives what rdmaflux measures. The default records nothing; the {@code rdmaflux-metrics} module
 * implements it with Micrometer, so this module needs no Micrometer at run time.
 *
 * <p>Called on the CM and completion threads: implementations must be fast, non-blocking and
 * allocation-free on the per-message methods.
 */
public interface RdmaRecorder {
    /** The recorder that records nothing. */
    RdmaRecorder NOOP = new RdmaRecorder() {
    };

    /** What a connection attempt came to. */
    enum Outcome {
        /** Established. */
        SUCCESS,
        /** Failed at a step (the cause says why). */
        FAILURE,
        /** Cancelled or closed before it was established. */
        CANCELLED
    }

    /**
     * A connect (client) or accept (server) finished.
     *
     * @param server whether this was an accept
     * @param outcome how it ended
     * @param cause the exception's simple name for failures (bounded set), else {@code null}
     */
    default void connectOutcome(boolean server, Outcome outcome, String cause) {
    }

    /**
     * A connect (client) or accept (server) finished, with the failure itself: what cm-reactive calls. By
     * default {@link #connectOutcome(boolean, Outcome, String)} with the failure's simple name; implementations
     * that need the exception (a trace marks its span failed with it) override this one.
     *
     * @param server whether this was an accept
     * @param outcome how it ended
     * @param error the failure for {@link Outcome#FAILURE}, else {@code null}
     */
    default void connectOutcome(boolean server, Outcome outcome, Throwable error) {
        connectOutcome(server, outcome, error == null ? null : error.getClass().getSimpleName());
    }

    /**
     * A connection step finished successfully.
     *
     * @param step the step
     * @param nanos how long it took
     */
    default void stepDuration(Step step, long nanos) {
    }

    /**
     * A connection was established or closed.
     *
     * @param delta +1 when a connection is established, -1 when it closes
     */
    default void activeConnections(int delta) {
    }

    /**
     * The CM loop read an event.
     *
     * @param type a connection manager event the loop read
     */
    default void cmEvent(CmEventType type) {
    }

    /**
     * A message was sent.
     *
     * @param bytes payload of a message whose send completed
     */
    default void messageSent(int bytes) {
    }

    /**
     * A message was received.
     *
     * @param bytes payload of a received message
     */
    default void messageReceived(int bytes) {
    }

    /**
     * An operation completed successfully.
     *
     * @param operation one of {@code send}, {@code write}, {@code write_imm}, {@code read}, {@code cas}, {@code faa}
     * @param nanos from post to completion
     */
    default void operationLatency(String operation, long nanos) {
    }

    /**
     * A work completion failed.
     *
     * @param status a failed work completion's status
     */
    default void completionError(WcStatus status) {
    }

    /** A send had to wait because the peer granted no credit. */
    default void creditWait() {
    }

    /**
     * A connection's CQ was polled, or on a shared CQ
     * ({@link ConnectionOptions#sharedCompletionQueue() ConnectionOptions.sharedCompletionQueue()}) its inbox
     * was drained: the completions it handles in one batch, under one hold of its lock.
     *
     * @param completions how many completions one poll of a CQ (or one drain of an inbox) returned
     */
    default void pollBatch(int completions) {
    }

    /**
     * Work requests were posted or completed.
     *
     * @param delta change in posted, not yet completed work requests
     */
    default void outstanding(int delta) {
    }

    /**
     * A multicast group was joined or left.
     *
     * @param delta +1 when a multicast group is joined, -1 when it is left
     */
    default void multicastGroups(int delta) {
    }

    /**
     * A datagram was sent.
     *
     * @param bytes payload of a datagram whose send completed
     */
    default void datagramSent(int bytes) {
    }

    /**
     * A datagram was received.
     *
     * @param bytes payload of a received datagram
     */
    default void datagramReceived(int bytes) {
    }

    /**
     * {@code overflow} (a subscriber's queue was full) or {@code error} (failed receive).
     *
     * @param reason {@code overflow} (a subscriber's queue was full) or {@code error} (failed receive)
     */
    default void datagramDropped(String reason) {
    }

    /**
     * A connection attempt begins: a client's connect was subscribed to, or a server accepted a connect
     * request (its filter said yes), or refused one that broke the handshake's protocol. Called once per
     * attempt, before anything else is recorded for it, never on a per-message path: on the subscribing
     * thread for a connect, on the server's CM loop for an accept.
     *
     * <p>The recorder returned receives that attempt's {@link #connectOutcome} (exactly once) and, once
     * established, everything its connection records. Implementations that observe attempts (tracing)
     * start their observation here, taking its parent from {@code context}, and end it in
     * {@code connectOutcome}.
     *
     * @param server whether this is an accept
     * @param peer the peer's address
     * @param context the Reactor context of the connect's subscriber, or of the subscriber of the server's
     *                {@code RdmaServer.bind}
     * @return the recorder for this attempt and its connection; by default {@link #forPeer forPeer(peer)}
     */
    default RdmaRecorder attempt(boolean server, java.net.InetSocketAddress peer, reactor.util.context.ContextView context) {
        return forPeer(peer);
    }

    /**
     * A recorder for one connection with a known peer, for implementations that tag by remote address.
     *
     * @param peer the peer's address
     * @return the recorder to use for that connection (this one by default)
     */
    default RdmaRecorder forPeer(java.net.InetSocketAddress peer) {
        return this;
    }
}
