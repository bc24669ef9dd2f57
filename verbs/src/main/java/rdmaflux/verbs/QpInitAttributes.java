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

    /**
     * Leases the referenced CQs/SRQ and writes the native struct's fields, from {@code qp_context} to
     * {@code sq_sig_all} ({@code qp_context} NULL), with one bulk copy ({@link NativeImage}: queue pairs are
     * made once per connection, mostly by code the JIT has not compiled, where each field store through the
     * FFM API is a deep var handle call). Bytes after {@code sq_sig_all} are left as they are, so the same
     * call fills the head of an {@code ibv_qp_init_attr_ex}. Close the result after the call.
     */
    Leases writeTo(MemorySegment init) {
        Leases leases = new Leases();
        write(init, leases.take(sendCq).address(), leases.take(receiveCq).address(), leases.take(srq).address(),
                type.value(), signalAll, maxSendWr, srq == null ? maxReceiveWr : 0, maxSendSge,
                srq == null ? maxReceiveSge : 0, maxInlineData);
        return leases;
    }

    /** The struct's fields from {@code qp_context} (NULL) to {@code sq_sig_all}, in one copy; see {@link #writeTo}. */
    static void write(MemorySegment init, long sendCq, long receiveCq, long srq, int type, boolean signalAll,
                      int maxSendWr, int maxReceiveWr, int maxSendSge, int maxReceiveSge, int maxInlineData) {
        long[] image = new long[Layout.IMAGE_LONGS];
        NativeImage.put(image, Layout.SEND_CQ, 8, sendCq);
        NativeImage.put(image, Layout.RECV_CQ, 8, receiveCq);
        NativeImage.put(image, Layout.SRQ, 8, srq);
        NativeImage.put(image, Layout.MAX_SEND_WR, 4, maxSendWr);
        NativeImage.put(image, Layout.MAX_RECV_WR, 4, maxReceiveWr);
        NativeImage.put(image, Layout.MAX_SEND_SGE, 4, maxSendSge);
        NativeImage.put(image, Layout.MAX_RECV_SGE, 4, maxReceiveSge);
        NativeImage.put(image, Layout.MAX_INLINE_DATA, 4, maxInlineData);
        NativeImage.put(image, Layout.QP_TYPE, 4, type);
        NativeImage.put(image, Layout.SQ_SIG_ALL, 4, signalAll ? 1 : 0);
        MemorySegment.copy(MemorySegment.ofArray(image), 0, init, 0, Layout.WRITTEN);
    }

    /**
     * Reads the capacities the provider granted, which {@code ibv_create_qp} and {@code rdma_create_qp} write
     * back into the struct, with one bulk copy.
     *
     * @param init the struct after the call
     * @return max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, in that order
     */
    static int[] grantedCapacities(MemorySegment init) {
        long[] image = new long[Layout.IMAGE_LONGS];
        MemorySegment.copy(init, 0, MemorySegment.ofArray(image), 0, Layout.WRITTEN);
        return new int[] {(int) NativeImage.get(image, Layout.MAX_SEND_WR, 4),
            (int) NativeImage.get(image, Layout.MAX_RECV_WR, 4), (int) NativeImage.get(image, Layout.MAX_SEND_SGE, 4),
            (int) NativeImage.get(image, Layout.MAX_RECV_SGE, 4), (int) NativeImage.get(image, Layout.MAX_INLINE_DATA, 4)};
    }

    /** Where the fields of {@code struct ibv_qp_init_attr} are. */
    static final class Layout {
        static final long SEND_CQ = ibv_qp_init_attr.send_cq$offset();
        static final long RECV_CQ = ibv_qp_init_attr.recv_cq$offset();
        static final long SRQ = ibv_qp_init_attr.srq$offset();
        static final long CAP = ibv_qp_init_attr.cap$offset();
        static final long MAX_SEND_WR = CAP + ibv_qp_cap.max_send_wr$offset();
        static final long MAX_RECV_WR = CAP + ibv_qp_cap.max_recv_wr$offset();
        static final long MAX_SEND_SGE = CAP + ibv_qp_cap.max_send_sge$offset();
        static final long MAX_RECV_SGE = CAP + ibv_qp_cap.max_recv_sge$offset();
        static final long MAX_INLINE_DATA = CAP + ibv_qp_cap.max_inline_data$offset();
        static final long QP_TYPE = ibv_qp_init_attr.qp_type$offset();
        static final long SQ_SIG_ALL = ibv_qp_init_attr.sq_sig_all$offset();
        /** The bytes written: up to the end of {@code sq_sig_all}, the last field. */
        static final long WRITTEN = SQ_SIG_ALL + 4;
        static final int IMAGE_LONGS = (int) ((ibv_qp_init_attr.sizeof() + 7) / 8);

        private Layout() {
        }
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

    /** {@return what this queue pair asks of its device, to compare with the device's maximums} */
    DeviceLimits.Size size() {
        return srq == null ? DeviceLimits.qp(maxSendWr, maxReceiveWr, maxSendSge, maxReceiveSge)
                : DeviceLimits.qp(maxSendWr, 0, maxSendSge, 0);
    }
}
