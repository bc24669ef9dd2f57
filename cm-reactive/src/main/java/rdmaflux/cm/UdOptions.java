package rdmaflux.cm;


import java.time.Duration;
import java.util.Objects;

import reactor.core.scheduler.Scheduler;

/**
 * What {@link DatagramOptions} and {@link MulticastOptions} share: both run a UD queue pair with
 * a ring of receive buffers and a pool of send buffers, resolve an address first, and deliver
 * signals and metrics the same way.
 */
abstract class UdOptions {
    /** Receives or sends in flight per queue pair at most; rxe and mlx5 accept far more, 32 Ki keeps memory sane. */
    private static final int MAX_BUFFERS = 32_768;

    private final int receiveBuffers;
    private final int sendBuffers;
    private final Duration addressTimeout;
    private final Scheduler scheduler;
    private final RdmaRecorder recorder;

    UdOptions(Builder<?> b) {
        this.receiveBuffers = buffers("receiveBuffers", b.receiveBuffers);
        this.sendBuffers = buffers("sendBuffers", b.sendBuffers);
        this.addressTimeout = positive("addressTimeout", b.addressTimeout);
        this.scheduler = b.scheduler;
        this.recorder = Objects.requireNonNull(b.recorder, "recorder");
    }

    private static int buffers(String name, int n) {
        if (n <= 0 || n > MAX_BUFFERS) {
            throw new IllegalArgumentException(name + " must be in [1, " + MAX_BUFFERS + "], got " + n);
        }
        return n;
    }

    static Duration positive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + d);
        }
        return d;
    }

    /**
     * {@return receives kept posted: a subscriber that does not request holds at most this many
     * datagrams before the device starts dropping. Shared multicast joins use the first
     * subscriber's value.}
     */
    public int receiveBuffers() {
        return receiveBuffers;
    }

    /** {@return registered send buffers: datagrams in flight at most} */
    public int sendBuffers() {
        return sendBuffers;
    }

    /** {@return how long address resolution may take} */
    public Duration addressTimeout() {
        return addressTimeout;
    }

    /**
     * {@return where user-visible signals are delivered: the one set, else the shared loops'
     * {@linkplain RdmaLoops#scheduler() signal threads}, at each use}
     */
    public Scheduler scheduler() {
        Scheduler s = scheduler;
        return s != null ? s : LoopsImplementation.defaultScheduler(null);
    }

    /** {@return the metrics recorder (datagrams in/out/dropped, groups joined); no-op by default} */
    public RdmaRecorder recorder() {
        return recorder;
    }

    /**
     * The setters both builders share.
     *
     * @param <B> the concrete builder, returned by every setter
     */
    abstract static class Builder<B extends Builder<B>> {
        private int receiveBuffers = 64;
        private int sendBuffers = 32;
        private Duration addressTimeout = Duration.ofSeconds(2);
        /** Null: the shared loops' signal threads, looked up at each use. */
        private Scheduler scheduler;
        private RdmaRecorder recorder = RdmaRecorder.NOOP;

        Builder() {
        }

        Builder(UdOptions o) {
            receiveBuffers = o.receiveBuffers;
            sendBuffers = o.sendBuffers;
            addressTimeout = o.addressTimeout;
            scheduler = o.scheduler;
            recorder = o.recorder;
        }

        @SuppressWarnings("unchecked")
        private B self() {
            return (B) this;
        }

        /**
         * Sets the receives kept posted.
         *
         * @param n receives kept posted, 1 to 32768
         * @return this
         */
        public B receiveBuffers(int n) {
            receiveBuffers = n;
            return self();
        }

        /**
         * Sets the send buffers.
         *
         * @param n send buffers, 1 to 32768
         * @return this
         */
        public B sendBuffers(int n) {
            sendBuffers = n;
            return self();
        }

        /**
         * Sets the address resolution timeout.
         *
         * @param t address resolution timeout
         * @return this
         */
        public B addressTimeout(Duration t) {
            addressTimeout = t;
            return self();
        }

        /**
         * Sets where user-visible signals are delivered.
         *
         * @param s where user-visible signals are delivered
         * @return this
         */
        public B scheduler(Scheduler s) {
            scheduler = Objects.requireNonNull(s, "scheduler");
            return self();
        }

        /**
         * Sets the metrics recorder.
         *
         * @param r the metrics recorder
         * @return this
         */
        public B recorder(RdmaRecorder r) {
            recorder = r;
            return self();
        }
    }
}
