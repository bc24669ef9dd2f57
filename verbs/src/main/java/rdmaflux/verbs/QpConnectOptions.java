package rdmaflux.verbs;

/**
 * Immutable settings for bringing a QP from RESET to RTS ({@link QueuePair#connect}); build with
 * {@link #builder()}. The defaults suit RoCE and Soft-RoCE: port 1, GID index 1 (the IPv4-mapped
 * RoCE v2 entry on rxe), MTU 1024, and reliable-connection timers that ride out a slow receiver instead
 * of failing with RNR_RETRY_EXC_ERR (rnr_retry 7 = retry forever).
 *
 * @param port local port number, from 1
 * @param gidIndex index of the local GID used as source
 * @param pkeyIndex partition key index
 * @param mtu the largest path MTU to use
 * @param access what the peer may do on this QP (RDMA read/write/atomic must be allowed here too)
 * @param minRnrTimer encoded RNR NAK timer the receiver asks the sender to wait (12 = 0.64 ms)
 * @param rnrRetry how often the sender retries after RNR NAKs; 7 means forever
 * @param retryCount transport retries before RETRY_EXC_ERR (0..7)
 * @param timeout encoded local ACK timeout, 4.096 µs × 2^timeout (14 ≈ 67 ms)
 * @param maxRdAtomic outstanding RDMA reads/atomics this side initiates
 * @param maxDestRdAtomic outstanding RDMA reads/atomics this side accepts
 * @param serviceLevel service level (IB) / priority
 * @param hopLimit GRH hop limit
 * @param trafficClass GRH traffic class
 * @param qkey queue key for UD QPs
 */
public record QpConnectOptions(int port, int gidIndex, int pkeyIndex, Mtu mtu, AccessFlags access, int minRnrTimer,
                               int rnrRetry, int retryCount, int timeout, int maxRdAtomic, int maxDestRdAtomic,
                               int serviceLevel, int hopLimit, int trafficClass, int qkey) {
    /** The defaults described on the type. */
    public static final QpConnectOptions DEFAULTS = builder().build();

    /** Validates ranges. */
    public QpConnectOptions {
        check("port", port, 1, 255);
        check("gidIndex", gidIndex, 0, 255);
        check("minRnrTimer", minRnrTimer, 0, 31);
        check("rnrRetry", rnrRetry, 0, 7);
        check("retryCount", retryCount, 0, 7);
        check("timeout", timeout, 0, 31);
        check("maxRdAtomic", maxRdAtomic, 0, 255);
        check("maxDestRdAtomic", maxDestRdAtomic, 0, 255);
        check("hopLimit", hopLimit, 0, 255);
        java.util.Objects.requireNonNull(mtu, "mtu");
        java.util.Objects.requireNonNull(access, "access");
    }

    private static void check(String name, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + v);
        }
    }

    /** {@return a builder with the defaults} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder starting from these options} */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.port = port;
        b.gidIndex = gidIndex;
        b.pkeyIndex = pkeyIndex;
        b.mtu = mtu;
        b.access = access;
        b.minRnrTimer = minRnrTimer;
        b.rnrRetry = rnrRetry;
        b.retryCount = retryCount;
        b.timeout = timeout;
        b.maxRdAtomic = maxRdAtomic;
        b.maxDestRdAtomic = maxDestRdAtomic;
        b.serviceLevel = serviceLevel;
        b.hopLimit = hopLimit;
        b.trafficClass = trafficClass;
        b.qkey = qkey;
        return b;
    }

    /** Mutable builder. */
    public static final class Builder {
        private int port = 1;
        private int gidIndex = 1;
        private int pkeyIndex;
        private Mtu mtu = Mtu.MTU_1024;
        private AccessFlags access = AccessFlags.REMOTE_ALL;
        private int minRnrTimer = 12;
        private int rnrRetry = 7;
        private int retryCount = 7;
        private int timeout = 14;
        private int maxRdAtomic = 1;
        private int maxDestRdAtomic = 1;
        private int serviceLevel;
        private int hopLimit = 64;
        private int trafficClass;
        private int qkey = 0x11111111;

        private Builder() {
        }

        /**
         * Sets the port number.
         *
         * @param v port number
         * @return this
         */
        public Builder port(int v) {
            port = v;
            return this;
        }

        /**
         * Sets the source GID index.
         *
         * @param v source GID index
         * @return this
         */
        public Builder gidIndex(int v) {
            gidIndex = v;
            return this;
        }

        /**
         * Sets the partition key index.
         *
         * @param v partition key index
         * @return this
         */
        public Builder pkeyIndex(int v) {
            pkeyIndex = v;
            return this;
        }

        /**
         * Sets the largest path MTU.
         *
         * @param v largest path MTU
         * @return this
         */
        public Builder mtu(Mtu v) {
            mtu = v;
            return this;
        }

        /**
         * Sets the remote access granted on the QP.
         *
         * @param v remote access granted on the QP
         * @return this
         */
        public Builder access(AccessFlags v) {
            access = v;
            return this;
        }

        /**
         * Sets the encoded RNR NAK timer.
         *
         * @param v encoded RNR NAK timer
         * @return this
         */
        public Builder minRnrTimer(int v) {
            minRnrTimer = v;
            return this;
        }

        /**
         * Sets the RNR retries (7 = forever).
         *
         * @param v RNR retries (7 = forever)
         * @return this
         */
        public Builder rnrRetry(int v) {
            rnrRetry = v;
            return this;
        }

        /**
         * Sets the transport retries.
         *
         * @param v transport retries
         * @return this
         */
        public Builder retryCount(int v) {
            retryCount = v;
            return this;
        }

        /**
         * Sets the encoded ACK timeout.
         *
         * @param v encoded ACK timeout
         * @return this
         */
        public Builder timeout(int v) {
            timeout = v;
            return this;
        }

        /**
         * Sets how many RDMA reads and atomics may be outstanding in each direction.
         *
         * @param initiate reads/atomics initiated
         * @param accept reads/atomics accepted
         * @return this
         */
        public Builder readAtomicDepth(int initiate, int accept) {
            maxRdAtomic = initiate;
            maxDestRdAtomic = accept;
            return this;
        }

        /**
         * Sets the service level.
         *
         * @param v service level
         * @return this
         */
        public Builder serviceLevel(int v) {
            serviceLevel = v;
            return this;
        }

        /**
         * Sets the hop limit.
         *
         * @param v hop limit
         * @return this
         */
        public Builder hopLimit(int v) {
            hopLimit = v;
            return this;
        }

        /**
         * Sets the traffic class.
         *
         * @param v traffic class
         * @return this
         */
        public Builder trafficClass(int v) {
            trafficClass = v;
            return this;
        }

        /**
         * Sets the UD queue key.
         *
         * @param v UD queue key
         * @return this
         */
        public Builder qkey(int v) {
            qkey = v;
            return this;
        }

        /** {@return the options} */
        public QpConnectOptions build() {
            return new QpConnectOptions(port, gidIndex, pkeyIndex, mtu, access, minRnrTimer, rnrRetry, retryCount,
                    timeout, maxRdAtomic, maxDestRdAtomic, serviceLevel, hopLimit, trafficClass, qkey);
        }
    }
}
