package rdmaflux.cm;

import java.net.InetSocketAddress;

/**
 * Decides whether a server accepts a connect request. Runs on the server's scheduler, never on the
 * connection manager thread, so it may take its time (within the accept timeout).
 */
@FunctionalInterface
public interface AcceptFilter {
    /** Accepts everything. */
    AcceptFilter ACCEPT_ALL = (peer, data) -> Decision.accept();

    /**
     * Decides about one connect request.
     *
     * @param peer the client's address
     * @param privateData the application private data the client sent
     * @return accept, or reject with private data for the client
     */
    Decision decide(InetSocketAddress peer, byte[] privateData);

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
         *                    (at most 148 bytes)
         * @return a rejecting decision
         */
        public static Decision reject(byte[] privateData) {
            if (privateData.length > 148) {
                throw new IllegalArgumentException("reject private data is limited to 148 bytes");
            }
            return new Decision(false, privateData.clone());
        }

        /** {@return whether to accept} */
        public boolean isAccept() {
            return accept;
        }

        byte[] rejectData() {
            return rejectData;
        }
    }
}
