package rdmaflux.cm;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Objects;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Immutable options of multicast joins and senders; start from {@link #defaults()}.
 *
 * <p>Defaults: no local address (routing picks the device), 64 receive buffers, 32 send buffers,
 * 2 s address resolution, 10 s for the whole join, send-only joins for senders, user signals on
 * {@link Schedulers#parallel()}.
 */
public final class MulticastOptions {
    private static final MulticastOptions DEFAULTS = new Builder().build();

    private final InetAddress localAddress;
    private final int receiveBuffers;
    private final int sendBuffers;
    private final Duration addressTimeout;
    private final Duration joinTimeout;
    private final boolean sendOnly;
    private final Scheduler scheduler;
    private final RdmaRecorder recorder;

    private MulticastOptions(Builder b) {
        if (b.receiveBuffers <= 0 || b.receiveBuffers > 32_768) {
            throw new IllegalArgumentException("receiveBuffers must be in [1, 32768], got " + b.receiveBuffers);
        }
        if (b.sendBuffers <= 0 || b.sendBuffers > 32_768) {
            throw new IllegalArgumentException("sendBuffers must be in [1, 32768], got " + b.sendBuffers);
        }
        this.localAddress = b.localAddress;
        this.receiveBuffers = b.receiveBuffers;
        this.sendBuffers = b.sendBuffers;
        this.addressTimeout = positive("addressTimeout", b.addressTimeout);
        this.joinTimeout = positive("joinTimeout", b.joinTimeout);
        this.sendOnly = b.sendOnly;
        this.scheduler = Objects.requireNonNull(b.scheduler, "scheduler");
        this.recorder = Objects.requireNonNull(b.recorder, "recorder");
    }

    static Duration positive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + d);
        }
        return d;
    }

    /** @return the default options */
    public static MulticastOptions defaults() {
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

    /**
     * @return the local address of the RDMA interface to join through (the source of
     *         {@code rdma_resolve_addr}), or {@code null} to let the routing table pick one
     */
    public InetAddress localAddress() {
        return localAddress;
    }

    /**
     * @return receives kept posted for a group; a subscriber that does not request holds at most this many
     *         datagrams before the device starts dropping. Shared joins use the first subscriber's value.
     */
    public int receiveBuffers() {
        return receiveBuffers;
    }

    /** @return registered send buffers of a sender: datagrams in flight at most */
    public int sendBuffers() {
        return sendBuffers;
    }

    /** @return how long address resolution may take */
    public Duration addressTimeout() {
        return addressTimeout;
    }

    /** @return how long address resolution plus the join may take before {@link RdmaMulticastException.JoinTimeout} */
    public Duration joinTimeout() {
        return joinTimeout;
    }

    /**
     * @return whether senders join as send-only full members ({@code RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER}),
     *         falling back to a full join when the kernel refuses
     */
    public boolean sendOnly() {
        return sendOnly;
    }

    /** @return where user-visible signals are delivered */
    public Scheduler scheduler() {
        return scheduler;
    }

    /** @return the metrics recorder (datagrams in/out/dropped, groups joined); no-op by default */
    public RdmaRecorder recorder() {
        return recorder;
    }

    /** @param address local RDMA interface address @return new options */
    public MulticastOptions withLocalAddress(InetAddress address) {
        return toBuilder().localAddress(address).build();
    }

    /** Mutable builder. */
    public static final class Builder {
        private InetAddress localAddress;
        private int receiveBuffers = 64;
        private int sendBuffers = 32;
        private Duration addressTimeout = Duration.ofSeconds(2);
        private Duration joinTimeout = Duration.ofSeconds(10);
        private boolean sendOnly = true;
        private Scheduler scheduler = Schedulers.parallel();
        private RdmaRecorder recorder = RdmaRecorder.NOOP;

        Builder() {
        }

        Builder(MulticastOptions o) {
            localAddress = o.localAddress;
            receiveBuffers = o.receiveBuffers;
            sendBuffers = o.sendBuffers;
            addressTimeout = o.addressTimeout;
            joinTimeout = o.joinTimeout;
            sendOnly = o.sendOnly;
            scheduler = o.scheduler;
            recorder = o.recorder;
        }

        /** @param a local RDMA interface address, or {@code null} @return this */
        public Builder localAddress(InetAddress a) {
            localAddress = a;
            return this;
        }

        /** @param n receives kept posted per group @return this */
        public Builder receiveBuffers(int n) {
            receiveBuffers = n;
            return this;
        }

        /** @param n send buffers per sender @return this */
        public Builder sendBuffers(int n) {
            sendBuffers = n;
            return this;
        }

        /** @param t address resolution timeout @return this */
        public Builder addressTimeout(Duration t) {
            addressTimeout = t;
            return this;
        }

        /** @param t timeout of resolution plus join @return this */
        public Builder joinTimeout(Duration t) {
            joinTimeout = t;
            return this;
        }

        /** @param b whether senders try a send-only join first @return this */
        public Builder sendOnly(boolean b) {
            sendOnly = b;
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
        public MulticastOptions build() {
            return new MulticastOptions(this);
        }
    }
}
