package rdmaflux.cm;

import java.time.Duration;
import java.util.Objects;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Immutable options of a {@link RdmaDatagramEndpoint}; start from {@link #defaults()}.
 *
 * <p>Defaults: 64 receive buffers, 32 send buffers, 2 s each for address and route resolution, 10 s
 * for a whole {@link RdmaDatagramEndpoint#resolve resolve}, user signals on {@link Schedulers#parallel()}.
 */
public final class DatagramOptions {
    private static final DatagramOptions DEFAULTS = new Builder().build();

    private final int receiveBuffers;
    private final int sendBuffers;
    private final Duration addressTimeout;
    private final Duration routeTimeout;
    private final Duration resolveTimeout;
    private final Scheduler scheduler;
    private final RdmaRecorder recorder;

    private DatagramOptions(Builder b) {
        if (b.receiveBuffers <= 0 || b.receiveBuffers > 32_768) {
            throw new IllegalArgumentException("receiveBuffers must be in [1, 32768], got " + b.receiveBuffers);
        }
        if (b.sendBuffers <= 0 || b.sendBuffers > 32_768) {
            throw new IllegalArgumentException("sendBuffers must be in [1, 32768], got " + b.sendBuffers);
        }
        this.receiveBuffers = b.receiveBuffers;
        this.sendBuffers = b.sendBuffers;
        this.addressTimeout = MulticastOptions.positive("addressTimeout", b.addressTimeout);
        this.routeTimeout = MulticastOptions.positive("routeTimeout", b.routeTimeout);
        this.resolveTimeout = MulticastOptions.positive("resolveTimeout", b.resolveTimeout);
        this.scheduler = Objects.requireNonNull(b.scheduler, "scheduler");
        this.recorder = Objects.requireNonNull(b.recorder, "recorder");
    }

    /** @return the default options */
    public static DatagramOptions defaults() {
        return DEFAULTS;
    }

    /** @return a builder with the defaults */
    public static Builder builder() {
        return new Builder();
    }

    /** @return a builder starting from these options */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** @return receives kept posted: datagrams held for a subscriber that does not request, at most */
    public int receiveBuffers() {
        return receiveBuffers;
    }

    /** @return registered send buffers: datagrams in flight at most */
    public int sendBuffers() {
        return sendBuffers;
    }

    /** @return address resolution timeout */
    public Duration addressTimeout() {
        return addressTimeout;
    }

    /** @return route resolution timeout */
    public Duration routeTimeout() {
        return routeTimeout;
    }

    /** @return how long a whole resolve (address, route, the peer's answer) may take */
    public Duration resolveTimeout() {
        return resolveTimeout;
    }

    /** @return where user-visible signals are delivered */
    public Scheduler scheduler() {
        return scheduler;
    }

    /** @return the metrics recorder (datagrams in/out/dropped, groups joined); no-op by default */
    public RdmaRecorder recorder() {
        return recorder;
    }

    /** Mutable builder. */
    public static final class Builder {
        private int receiveBuffers = 64;
        private int sendBuffers = 32;
        private Duration addressTimeout = Duration.ofSeconds(2);
        private Duration routeTimeout = Duration.ofSeconds(2);
        private Duration resolveTimeout = Duration.ofSeconds(10);
        private Scheduler scheduler = Schedulers.parallel();
        private RdmaRecorder recorder = RdmaRecorder.NOOP;

        Builder() {
        }

        Builder(DatagramOptions o) {
            receiveBuffers = o.receiveBuffers;
            sendBuffers = o.sendBuffers;
            addressTimeout = o.addressTimeout;
            routeTimeout = o.routeTimeout;
            resolveTimeout = o.resolveTimeout;
            scheduler = o.scheduler;
            recorder = o.recorder;
        }

        /** @param n receives kept posted @return this */
        public Builder receiveBuffers(int n) {
            receiveBuffers = n;
            return this;
        }

        /** @param n send buffers @return this */
        public Builder sendBuffers(int n) {
            sendBuffers = n;
            return this;
        }

        /** @param t address resolution timeout @return this */
        public Builder addressTimeout(Duration t) {
            addressTimeout = t;
            return this;
        }

        /** @param t route resolution timeout @return this */
        public Builder routeTimeout(Duration t) {
            routeTimeout = t;
            return this;
        }

        /** @param t whole-resolve timeout @return this */
        public Builder resolveTimeout(Duration t) {
            resolveTimeout = t;
            return this;
        }

        /** @param s where user-visible signals are delivered @return this */
        public Builder scheduler(Scheduler s) {
            scheduler = s;
            return this;
        }

        /** @param r the metrics recorder @return this */
        public Builder recorder(RdmaRecorder r) {
            recorder = r;
            return this;
        }

        /** @return the options */
        public DatagramOptions build() {
            return new DatagramOptions(this);
        }
    }
}
