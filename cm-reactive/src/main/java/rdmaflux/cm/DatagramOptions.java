package rdmaflux.cm;

import java.time.Duration;


/**
 * Immutable options of a {@link RdmaDatagramEndpoint}: start from {@link #defaults()} or {@link #builder()},
 * derive with {@link #toBuilder()}. Each accessor says what its option does and its default; each setter of
 * the {@link Builder}, which values it allows.
 *
 * <p>Threads: any; immutable.
 */
public final class DatagramOptions extends UdOptions {
    private static final DatagramOptions DEFAULTS = new Builder().build();

    private final Duration routeTimeout;
    private final Duration resolveTimeout;

    private DatagramOptions(Builder b) {
        super(b);
        this.routeTimeout = b.routeTimeout;
        this.resolveTimeout = b.resolveTimeout;
    }

    /** {@return the default options} */
    public static DatagramOptions defaults() {
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

    /** {@return how long route resolution may take; 2 s by default} */
    public Duration routeTimeout() {
        return routeTimeout;
    }

    /**
     * {@return how long a whole {@link RdmaDatagramEndpoint#resolve resolve} (address, route, the peer's answer)
     * may take; 10 s by default}
     */
    public Duration resolveTimeout() {
        return resolveTimeout;
    }

    @Override
    public String toString() {
        return "DatagramOptions[" + udToString() + ", routeTimeout=" + routeTimeout + ", resolveTimeout="
                + resolveTimeout + "]";
    }

    /**
     * Builds {@link DatagramOptions}. Each setter checks its value at once: a value it does not allow throws
     * {@link IllegalArgumentException} (a null it does not allow, {@link NullPointerException}), whose message
     * names the option and what it allows.
     *
     * <p>Threads: one at a time; not thread-safe.
     */
    public static final class Builder extends UdOptions.Builder<Builder> {
        private Duration routeTimeout = Duration.ofSeconds(2);
        private Duration resolveTimeout = Duration.ofSeconds(10);

        private Builder() {
        }

        private Builder(DatagramOptions o) {
            super(o);
            routeTimeout = o.routeTimeout;
            resolveTimeout = o.resolveTimeout;
        }

        /**
         * Sets {@link DatagramOptions#routeTimeout()}.
         *
         * @param t a positive duration
         * @return this
         */
        public Builder routeTimeout(Duration t) {
            routeTimeout = OptionChecks.positive("routeTimeout", t);
            return this;
        }

        /**
         * Sets {@link DatagramOptions#resolveTimeout()}.
         *
         * @param t a positive duration
         * @return this
         */
        public Builder resolveTimeout(Duration t) {
            resolveTimeout = OptionChecks.positive("resolveTimeout", t);
            return this;
        }

        /** {@return the options} */
        public DatagramOptions build() {
            return new DatagramOptions(this);
        }
    }
}
