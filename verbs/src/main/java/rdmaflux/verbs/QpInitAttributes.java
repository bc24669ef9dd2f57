package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

import rdmaflux.verbs.ffi.ibv_qp_cap;
import rdmaflux.verbs.ffi.ibv_qp_init_attr;

/**
 * Immutable creation attributes of a queue pair ({@code struct ibv_qp_init_attr}); build with
 * {@link #builder(QpType)}.
 *
 * @param type transport
 * @param sendCq CQ for send completions
 * @param receiveCq CQ for receive completions
 * @param srq shared receive queue, or {@code null} for the QP's own receive queue
 * @param maxSendWr send queue depth
 * @param maxReceiveWr receive queue depth (ignored with an SRQ)
 * @param maxSendSge scatter/gather entries per send
 * @param maxReceiveSge scatter/gather entries per receive
 * @param maxInlineData largest inline send payload asked for
 * @param signalAll whether every send generates a completion regardless of {@link SendFlag#SIGNALED}
 */
public record QpInitAttributes(QpType type, CompletionQueue sendCq, CompletionQueue receiveCq,
                               SharedReceiveQueue srq, int maxSendWr, int maxReceiveWr, int maxSendSge,
                               int maxReceiveSge, int maxInlineData, boolean signalAll) {

    /** Validates the attributes. */
    public QpInitAttributes {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(sendCq, "sendCq");
        Objects.requireNonNull(receiveCq, "receiveCq");
        if (maxSendWr <= 0 || maxSendSge <= 0 || maxInlineData < 0
                || (srq == null && (maxReceiveWr <= 0 || maxReceiveSge <= 0))) {
            throw new IllegalArgumentException("queue depths and SGE counts must be > 0 (inline >= 0): " + this);
        }
    }

    /**
     * Starts a builder with depths of 64, one SGE each way, no inline data.
     *
     * @param type transport
     * @return the builder
     */
    public static Builder builder(QpType type) {
        return new Builder(type);
    }

    /** Leases the referenced CQs/SRQ and writes the native struct; close the result after the call. */
    Leases writeTo(MemorySegment init) {
        Leases leases = new Leases();
        ibv_qp_init_attr.send_cq(init, leases.take(sendCq));
        ibv_qp_init_attr.recv_cq(init, leases.take(receiveCq));
        ibv_qp_init_attr.srq(init, leases.take(srq));
        ibv_qp_init_attr.qp_type(init, type.value());
        ibv_qp_init_attr.sq_sig_all(init, signalAll ? 1 : 0);
        MemorySegment cap = ibv_qp_init_attr.cap(init);
        ibv_qp_cap.max_send_wr(cap, maxSendWr);
        ibv_qp_cap.max_recv_wr(cap, srq == null ? maxReceiveWr : 0);
        ibv_qp_cap.max_send_sge(cap, maxSendSge);
        ibv_qp_cap.max_recv_sge(cap, srq == null ? maxReceiveSge : 0);
        ibv_qp_cap.max_inline_data(cap, maxInlineData);
        return leases;
    }

    /** Mutable builder; {@link #build()} validates. */
    public static final class Builder {
        private final QpType type;
        private CompletionQueue sendCq;
        private CompletionQueue receiveCq;
        private SharedReceiveQueue srq;
        private int maxSendWr = 64;
        private int maxReceiveWr = 64;
        private int maxSendSge = 1;
        private int maxReceiveSge = 1;
        private int maxInlineData;
        private boolean signalAll;

        private Builder(QpType type) {
            this.type = type;
        }

        /**
         * Sets the CQ for both directions.
         *
         * @param cq CQ for both directions
         * @return this
         */
        public Builder completionQueue(CompletionQueue cq) {
            this.sendCq = cq;
            this.receiveCq = cq;
            return this;
        }

        /**
         * Sets the CQ for send completions.
         *
         * @param cq CQ for send completions
         * @return this
         */
        public Builder sendCompletionQueue(CompletionQueue cq) {
            this.sendCq = cq;
            return this;
        }

        /**
         * Sets the CQ for receive completions.
         *
         * @param cq CQ for receive completions
         * @return this
         */
        public Builder receiveCompletionQueue(CompletionQueue cq) {
            this.receiveCq = cq;
            return this;
        }

        /**
         * Sets the shared receive queue.
         *
         * @param srq shared receive queue
         * @return this
         */
        public Builder sharedReceiveQueue(SharedReceiveQueue srq) {
            this.srq = srq;
            return this;
        }

        /**
         * Sets the send and receive queue depths.
         *
         * @param sendWr send depth
         * @param receiveWr receive depth
         * @return this
         */
        public Builder depth(int sendWr, int receiveWr) {
            this.maxSendWr = sendWr;
            this.maxReceiveWr = receiveWr;
            return this;
        }

        /**
         * Sets how many scatter/gather elements one work request may carry.
         *
         * @param sendSge SGEs per send
         * @param receiveSge SGEs per receive
         * @return this
         */
        public Builder sge(int sendSge, int receiveSge) {
            this.maxSendSge = sendSge;
            this.maxReceiveSge = receiveSge;
            return this;
        }

        /**
         * Sets the largest inline payload.
         *
         * @param bytes largest inline payload
         * @return this
         */
        public Builder maxInlineData(int bytes) {
            this.maxInlineData = bytes;
            return this;
        }

        /**
         * Sets the signal every send.
         *
         * @param all signal every send
         * @return this
         */
        public Builder signalAll(boolean all) {
            this.signalAll = all;
            return this;
        }

        /** {@return the attributes} */
        public QpInitAttributes build() {
            return new QpInitAttributes(type, sendCq, receiveCq, srq, maxSendWr, maxReceiveWr, maxSendSge,
                    maxReceiveSge, maxInlineData, signalAll);
        }
    }
}
