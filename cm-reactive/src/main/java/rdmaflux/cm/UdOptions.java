package rdmaflux.cm;


import java.time.Duration;

import reactor.core.scheduler.Scheduler;

/**
 * What {@link DatagramOptions} and {@link MulticastOptions} share: both run a UD queue pair with
 * a ring of receive buffers and a pool of send buffers, resolve an address first, and deliver
 * signals and metrics the same way. Users see these members as each subclass's and its builder's.
 *
 * <p>Threads: any; immutable (the builders are not thread-safe: one thread builds).
 */
abstract sealed class UdOptions permits DatagramOptions, MulticastOptions {
    /** Receives or sends in flight per queue pair at most; rxe and mlx5 accept far more, 32 Ki keeps memory sane. */
    private static final int MAX_BUFFERS = 32_768;

    private final int receiveBuffers;
    private final int sendBuffers;
    private final Duration addressTimeout;
    private final Scheduler scheduler;
    private final RdmaRecorder recorder;

    UdOptions(Builder<?> b) {
        this.receiveBuffers = b.receiveBuffers;
        this.sendBuffers = b.sendBuffers;
        this.addressTimeout = b.addressTimeout;
        this.scheduler = b.scheduler;
        this.recorder = b.recorder;
    }

    /**
     * {@return receives kept posted: a subscriber that does not request holds at most this many
     * datagrams before the device starts dropping; 64 by default. Shared multicast joins use the first
     * subscriber's value.}
     */
    public int receiveBuffers() {
        return receiveBuffers;
    }

    /** {@return registered send buffers: datagrams in flight at most; 32 by default} */
    public int sendBuffers() {
        return sendBuffers;
    }

    /**
     * {@return how long address resolution may take; 2 s by default. It runs in attempts of at most 1 s, and
     * one whose neighbour probes went unanswered is made again, with fresh probes, until this much time passed}
     */
    public Duration addressTimeout() {
        return addressTimeout;
    }

    /**
     * {@return where user-visible signals are delivered: the one set, else (the default) the shared loops'
     * {@linkplain RdmaLoops#scheduler() signal threads}, at each use}
     */
    public Scheduler scheduler() {
        Scheduler s = scheduler;
        return s != null ? s : LoopsImplementation.defaultScheduler(null);
    }

    /**
     * {@return the metrics recorder (datagrams in/out/dropped, groups joined); {@link RdmaRecorder#NOOP} by
     * default}
     */
    public RdmaRecorder recorder() {
        return recorder;
    }

    String udToString() {
        return "receiveBuffers=" + receiveBuffers + ", sendBuffers=" + sendBuffers + ", addressTimeout="
                + addressTimeout + ", scheduler=" + scheduler + ", recorder=" + recorder;
    }

    /**
     * The setters both builders share; like theirs, each checks its value at once.
     *
     * @param <B> the concrete builder, returned by every setter
     */
    abstract static sealed class Builder<B extends Builder<B>> permits DatagramOptions.Builder,
            MulticastOptions.Builder {
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
         * Sets {@code receiveBuffers()}.
         *
         * @param n 1..32768
         * @return this
         */
        public B receiveBuffers(int n) {
            receiveBuffers = OptionChecks.range("receiveBuffers", n, 1, MAX_BUFFERS);
            return self();
        }

        /**
         * Sets {@code sendBuffers()}.
         *
         * @param n 1..32768
         * @return this
         */
        public B sendBuffers(int n) {
            sendBuffers = OptionChecks.range("sendBuffers", n, 1, MAX_BUFFERS);
            return self();
        }

        /**
         * Sets {@code addressTimeout()}.
         *
         * @param t a positive duration
         * @return this
         */
        public B addressTimeout(Duration t) {
            addressTimeout = OptionChecks.positive("addressTimeout", t);
            return self();
        }

        /**
         * Sets {@code scheduler()}.
         *
         * @param s not null (leave it unset for the shared loops' signal threads)
         * @return this
         */
        public B scheduler(Scheduler s) {
            scheduler = OptionChecks.notNull("scheduler", s);
            return self();
        }

        /**
         * Sets {@code recorder()}.
         *
         * @param r not null ({@link RdmaRecorder#NOOP} for none)
         * @return this
         */
        public B recorder(RdmaRecorder r) {
            recorder = OptionChecks.notNull("recorder", r);
            return self();
        }
    }
}
