package rdmaflux.cm;

import java.time.Duration;


/**
 * Immutable options of a {@link RdmaDatagramEndpoint}; start from {@link #defaults()}.
 *
 * <p>Defaults: 64 receive buffers, 32 send buffers, 2 s each for address and route resolution, 10 s
 * for a whole {@link RdmaDatagramEndpoint#resolve resolve}, user signals on the shared loops'
 * {@linkplain RdmaLoops#scheduler() signal threads}.
 */
public final class DatagramOptions extends UdOptions {
    private static final DatagramOptions DEFAULTS = new Builder().build();

    private final Duration routeTimeout;
    private final Duration resolveTimeout;

    private DatagramOptions(Builder b) {
        super(b);
        this.routeTimeout = positive("routeTimeout", b.routeTimeout);
        this.resolveTimeout = positive("resolveTimeout", b.resolveTimeout);
    }

    /** {@return the default options} */
    public static DatagramOptions defaults() {
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

    /** {@return route resolution timeout} */
    public Duration routeTimeout() {
        return routeTimeout;
    }

    /** {@return how long a whole resolve (address, route, the peer's answer) may take} */
    public Duration resolveTimeout() {
        return resolveTimeout;
    }

    /** Mutable builder; the buffer, address-timeout, scheduler and recorder setters are shared with multicast. */
    public static final class Builder extends UdOptions.Builder<Builder> {
        private Duration routeTimeout = Duration.ofSeconds(2);
        private Duration resolveTimeout = Duration.ofSeconds(10);

        Builder() {
        }

        Builder(DatagramOptions o) {
            super(o);
            routeTimeout = o.routeTimeout;
            resolveTimeout = o.resolveTimeout;
        }

        /**
         * Sets the route resolution timeout.
         *
         * @param t route resolution timeout
         * @return this
         */
        public Builder routeTimeout(Duration t) {
            routeTimeout = t;
            return this;
        }

        /**
         * Sets the timeout of the whole resolution.
         *
         * @param t whole-resolve timeout
         * @return this
         */
        public Builder resolveTimeout(Duration t) {
            resolveTimeout = t;
            return this;
        }

        /** {@return the options} */
        public DatagramOptions build() {
            return new DatagramOptions(this);
        }
    }
}
