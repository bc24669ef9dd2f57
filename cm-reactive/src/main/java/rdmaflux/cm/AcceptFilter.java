package rdmaflux.cm;

import java.net.InetSocketAddress;

import reactor.core.publisher.Mono;

/**
 * Decides whether a server accepts a connect request. Never runs on the connection manager thread:
 * the server subscribes to {@link #decideAsync} on its options' scheduler ({@link #ACCEPT_ALL}, which
 * runs no code of the application, the server applies at once on that thread).
 *
 * <p>Two forms, one type. A lambda is the synchronous form, {@link #decide}, which may block for a
 * while (it runs on the scheduler, within the accept timeout). {@link #async(Async)} wraps a filter that
 * answers later, as a {@code Mono<Decision>} (a look-up in a remote service, say); the server then
 * never blocks a thread on it. {@link RdmaServer#bind} takes either, so existing synchronous filters
 * compile and behave as before.
 *
 * <p>Whatever the filter does, the server goes on: a decision must arrive within
 * {@link ConnectionOptions#timeout(Step) timeout(Step.ACCEPT)} of the request's arrival; a filter that
 * throws, returns {@code null}, errors, completes empty or does not answer in time rejects the request
 * (reason {@link RdmaCmException.Rejected#CONSUMER_REJECT}, no private data) and is logged. Until then
 * the request holds a place in the server's accept queue ({@link ServerOptions#acceptQueue()}).
 */
@FunctionalInterface
public interface AcceptFilter {
    /** Accepts everything; the server takes this decision on its CM loop, without a scheduler hop. */
    AcceptFilter ACCEPT_ALL = (peer, data) -> Decision.accept();

    /**
     * The most private data a rejection carries: the IB CM's REJ message has 148 bytes for it
     * ({@code IB_CM_REJ_PRIVATE_DATA_SIZE}), and rdma_cm adds no header of its own to a reject on
     * InfiniBand or RoCE, so all of them reach the client.
     */
    int MAX_REJECT_PRIVATE_DATA = rdmaflux.verbs.CmId.MAX_REJECT_PRIVATE_DATA;

    /**
     * Decides about one connect request (the synchronous form).
     *
     * @param peer the client's address
     * @param privateData the application private data the client sent
     * @return accept, or reject with private data for the client
     */
    Decision decide(InetSocketAddress peer, byte[] privateData);

    /**
     * Decides about one connect request, possibly later. The server calls only this; by default it calls
     * {@link #decide} (on the scheduler the server subscribes on).
     *
     * @param peer the client's address
     * @param privateData the application private data the client sent
     * @return one decision
     */
    default Mono<Decision> decideAsync(InetSocketAddress peer, byte[] privateData) {
        return Mono.fromCallable(() -> decide(peer, privateData));
    }

    /**
     * A filter that answers with a {@code Mono}.
     *
     * @param filter the asynchronous decision
     * @return a filter for {@link RdmaServer#bind}
     */
    static AcceptFilter async(Async filter) {
        java.util.Objects.requireNonNull(filter, "filter");
        return new AcceptFilter() {
            /** Asynchronous only: a blocking wait here would hide a slow filter's cost. */
            @Override
            public Decision decide(InetSocketAddress peer, byte[] privateData) {
                throw new UnsupportedOperationException("an asynchronous filter: call decideAsync");
            }

            @Override
            public Mono<Decision> decideAsync(InetSocketAddress peer, byte[] privateData) {
                return filter.decide(peer, privateData);
            }

            @Override
            public String toString() {
                return "AcceptFilter.async(" + filter + ")";
            }
        };
    }

    /** The asynchronous form of a filter, for {@link AcceptFilter#async(Async)}. */
    @FunctionalInterface
    interface Async {
        /**
         * Decides about one connect request.
         *
         * @param peer the client's address
         * @param privateData the application private data the client sent
         * @return one decision, within the accept timeout; an error or an empty {@code Mono} rejects
         */
        Mono<Decision> decide(InetSocketAddress peer, byte[] privateData);
    }

    /** The filter's answer. */
    final class Decision {
        private static final Decision ACCEPT = new Decision(true, new byte[0]);
        private final boolean accept;
        private final byte[] rejectData;

        private Decision(boolean accept, byte[] rejectData) {
            this.accept = accept;
            this.rejectData = rejectData;
        }

        /** {@return the accepting decision} */
        public static Decision accept() {
            return ACCEPT;
        }

        /**
         * Refuses the connection.
         *
         * @param privateData what the client's {@link RdmaCmException.Rejected#privateData()} will start with
         *                    (at most {@value AcceptFilter#MAX_REJECT_PRIVATE_DATA} bytes; the CM pads it to
         *                    that length)
         * @return a rejecting decision
         * @throws IllegalArgumentException when {@code privateData} is longer
         */
        public static Decision reject(byte[] privateData) {
            if (privateData.length > MAX_REJECT_PRIVATE_DATA) {
                throw new IllegalArgumentException("reject private data is limited to " + MAX_REJECT_PRIVATE_DATA
                        + " bytes (IB CM REJ), got " + privateData.length);
            }
            return new Decision(false, privateData.clone());
        }

        /** {@return whether to accept} */
        public boolean isAccept() {
            return accept;
        }

        /** {@return the private data a rejection sends the client (empty for an acceptance)} */
        public byte[] rejectData() {
            return rejectData.clone();
        }

        @Override
        public String toString() {
            return accept ? "accept" : "reject(" + rejectData.length + " bytes)";
        }
    }
}
