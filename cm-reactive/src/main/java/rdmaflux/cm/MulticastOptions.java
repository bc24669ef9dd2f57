package rdmaflux.cm;

import java.net.InetAddress;
import java.time.Duration;


/**
 * Immutable options of multicast joins and senders: start from {@link #defaults()} or {@link #builder()},
 * derive with {@link #toBuilder()}. Each accessor says what its option does and its default; each setter of
 * the {@link Builder}, which values it allows.
 *
 * <p>Threads: any; immutable.
 */
public final class MulticastOptions extends UdOptions {
    private static final MulticastOptions DEFAULTS = new Builder().build();

    private final InetAddress localAddress;
    private final Duration joinTimeout;
    private final boolean sendOnly;

    private MulticastOptions(Builder b) {
        super(b);
        this.localAddress = b.localAddress;
        this.joinTimeout = b.joinTimeout;
        this.sendOnly = b.sendOnly;
    }

    /** {@return the default options} */
    public static MulticastOptions defaults() {
        return DEFAULTS;
    }

    /** {@return a builder starting from the defaults} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder starting from these options} */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /**
     * {@return the local address of the RDMA interface to join through (the source of
     * {@code rdma_resolve_addr}), or {@code null} (the default) to let the routing table pick one}
     */
    public InetAddress localAddress() {
        return localAddress;
    }

    /**
     * {@return how long address resolution plus the join may take before
     * {@link RdmaMulticastException.JoinTimeout}; 10 s by default}
     */
    public Duration joinTimeout() {
        return joinTimeout;
    }

    /**
     * {@return whether senders join as send-only full members ({@code RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER}),
     * falling back to a full join when the kernel refuses; {@code true} by default}
     */
    public boolean sendOnly() {
        return sendOnly;
    }

    @Override
    public String toString() {
        return "MulticastOptions[" + udToString() + ", localAddress=" + localAddress + ", joinTimeout=" + joinTimeout
                + ", sendOnly=" + sendOnly + "]";
    }

    /**
     * Builds {@link MulticastOptions}. Each setter checks its value at once: a value it does not allow throws
     * {@link IllegalArgumentException} (a null it does not allow, {@link NullPointerException}), whose message
     * names the option and what it allows.
     *
     * <p>Threads: one at a time; not thread-safe.
     */
    public static final class Builder extends UdOptions.Builder<Builder> {
        private InetAddress localAddress;
        private Duration joinTimeout = Duration.ofSeconds(10);
        private boolean sendOnly = true;

        private Builder() {
        }

        private Builder(MulticastOptions o) {
            super(o);
            localAddress = o.localAddress;
            joinTimeout = o.joinTimeout;
            sendOnly = o.sendOnly;
        }

        /**
         * Sets {@link MulticastOptions#localAddress()}.
         *
         * @param a the address of a local RDMA interface, or {@code null} to let the routing table pick one
         * @return this
         */
        public Builder localAddress(InetAddress a) {
            localAddress = a;
            return this;
        }

        /**
         * Sets {@link MulticastOptions#joinTimeout()}.
         *
         * @param t a positive duration
         * @return this
         */
        public Builder joinTimeout(Duration t) {
            joinTimeout = OptionChecks.positive("joinTimeout", t);
            return this;
        }

        /**
         * Sets {@link MulticastOptions#sendOnly()}.
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
