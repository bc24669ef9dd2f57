package rdmaflux.cm;

import java.net.InetAddress;
import java.time.Duration;


/**
 * Immutable options of multicast joins and senders; start from {@link #defaults()}.
 *
 * <p>Defaults: no local address (routing picks the device), 64 receive buffers, 32 send buffers,
 * 2 s address resolution, 10 s for the whole join, send-only joins for senders, user signals on
 * the shared loops' {@linkplain RdmaLoops#scheduler() signal threads}.
 */
public final class MulticastOptions extends UdOptions {
    private static final MulticastOptions DEFAULTS = new Builder().build();

    private final InetAddress localAddress;
    private final Duration joinTimeout;
    private final boolean sendOnly;

    private MulticastOptions(Builder b) {
        super(b);
        this.localAddress = b.localAddress;
        this.joinTimeout = positive("joinTimeout", b.joinTimeout);
        this.sendOnly = b.sendOnly;
    }

    /** {@return the default options} */
    public static MulticastOptions defaults() {
        return DEFAULTS;
    }

    /** {@return a builder with the defaults} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder starting from these options} */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /**
     * {@return the local address of the RDMA interface to join through (the source of
     * {@code rdma_resolve_addr}), or {@code null} to let the routing table pick one}
     */
    public InetAddress localAddress() {
        return localAddress;
    }

    /** {@return how long address resolution plus the join may take before {@link RdmaMulticastException.JoinTimeout}} */
    public Duration joinTimeout() {
        return joinTimeout;
    }

    /**
     * {@return whether senders join as send-only full members ({@code RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER}),
     * falling back to a full join when the kernel refuses}
     */
    public boolean sendOnly() {
        return sendOnly;
    }

    /**
     * A copy bound to another local RDMA interface.
     *
     * @param address local RDMA interface address
     * @return new options
     */
    public MulticastOptions withLocalAddress(InetAddress address) {
        return toBuilder().localAddress(address).build();
    }

    /** Mutable builder; the buffer, address-timeout, scheduler and recorder setters are shared with datagrams. */
    public static final class Builder extends UdOptions.Builder<Builder> {
        private InetAddress localAddress;
        private Duration joinTimeout = Duration.ofSeconds(10);
        private boolean sendOnly = true;

        Builder() {
        }

        Builder(MulticastOptions o) {
            super(o);
            localAddress = o.localAddress;
            joinTimeout = o.joinTimeout;
            sendOnly = o.sendOnly;
        }

        /**
         * Sets the local RDMA interface.
         *
         * @param a local RDMA interface address, or {@code null}
         * @return this
         */
        public Builder localAddress(InetAddress a) {
            localAddress = a;
            return this;
        }

        /**
         * Sets the timeout of resolution plus join.
         *
         * @param t timeout of resolution plus join
         * @return this
         */
        public Builder joinTimeout(Duration t) {
            joinTimeout = t;
            return this;
        }

        /**
         * Sets whether senders try a send-only join first.
         *
         * @param b whether senders try a send-only join first
         * @return this
         */
        public Builder sendOnly(boolean b) {
            sendOnly = b;
            return this;
        }

        /** {@return the options} */
        public MulticastOptions build() {
            return new MulticastOptions(this);
        }
    }
}
