package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import rdmaflux.verbs.ffi.rdma_conn_param;

/**
 * Connection parameters ({@code struct rdma_conn_param}) for {@link CmId#connect} and {@link CmId#accept},
 * and as the peer's side carried by connection events.
 *
 * @param privateData up to 56 bytes on connect, 196 on accept (RoCE/IB CM limits); never {@code null}
 * @param responderResources RDMA reads/atomics this side accepts in flight
 * @param initiatorDepth RDMA reads/atomics this side issues in flight
 * @param flowControl whether hardware flow control is on
 * @param retryCount transport retries (0..7)
 * @param rnrRetryCount RNR retries (7 = forever)
 * @param srq whether the QP uses an SRQ
 * @param qpNumber the QP number (only when the QP was not created with rdma_create_qp)
 */
public record ConnectionParameters(byte[] privateData, int responderResources, int initiatorDepth,
                                   boolean flowControl, int retryCount, int rnrRetryCount, boolean srq,
                                   int qpNumber) {
    /** What rping and most rdma-core examples use: one read in flight each way, retry forever on RNR. */
    public static final ConnectionParameters DEFAULTS = new ConnectionParameters(new byte[0], 1, 1, false, 7, 7,
            false, 0);

    /** Validates and copies the private data. */
    public ConnectionParameters {
        privateData = privateData == null ? new byte[0] : privateData.clone();
        if (privateData.length > 255) {
            throw new IllegalArgumentException("private data is limited to 255 bytes (56 on connect, 196 on accept), got "
                    + privateData.length);
        }
        if (retryCount < 0 || retryCount > 7 || rnrRetryCount < 0 || rnrRetryCount > 7) {
            throw new IllegalArgumentException("retry counts are 3-bit values: " + retryCount + ", " + rnrRetryCount);
        }
    }

    /** @return a copy of the private data */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    /**
     * @param data new private data
     * @return a copy with that private data
     */
    public ConnectionParameters withPrivateData(byte[] data) {
        return new ConnectionParameters(data, responderResources, initiatorDepth, flowControl, retryCount,
                rnrRetryCount, srq, qpNumber);
    }

    MemorySegment toNative(Arena arena) {
        MemorySegment p = rdma_conn_param.allocate(arena);
        if (privateData.length > 0) {
            MemorySegment data = arena.allocate(privateData.length);
            MemorySegment.copy(privateData, 0, data, ValueLayout.JAVA_BYTE, 0, privateData.length);
            rdma_conn_param.private_data(p, data);
        }
        rdma_conn_param.private_data_len(p, (byte) privateData.length);
        rdma_conn_param.responder_resources(p, (byte) responderResources);
        rdma_conn_param.initiator_depth(p, (byte) initiatorDepth);
        rdma_conn_param.flow_control(p, (byte) (flowControl ? 1 : 0));
        rdma_conn_param.retry_count(p, (byte) retryCount);
        rdma_conn_param.rnr_retry_count(p, (byte) rnrRetryCount);
        rdma_conn_param.srq(p, (byte) (srq ? 1 : 0));
        rdma_conn_param.qp_num(p, qpNumber);
        return p;
    }

    static ConnectionParameters fromNative(MemorySegment p) {
        byte[] data = copyPrivateData(rdma_conn_param.private_data(p), rdma_conn_param.private_data_len(p));
        return new ConnectionParameters(data, Byte.toUnsignedInt(rdma_conn_param.responder_resources(p)),
                Byte.toUnsignedInt(rdma_conn_param.initiator_depth(p)), rdma_conn_param.flow_control(p) != 0,
                rdma_conn_param.retry_count(p) & 7, rdma_conn_param.rnr_retry_count(p) & 7,
                rdma_conn_param.srq(p) != 0, rdma_conn_param.qp_num(p));
    }

    static byte[] copyPrivateData(MemorySegment ptr, byte len) {
        int n = Byte.toUnsignedInt(len);
        if (n == 0 || ptr.equals(MemorySegment.NULL)) {
            return new byte[0];
        }
        return ptr.reinterpret(n).toArray(ValueLayout.JAVA_BYTE);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectionParameters c && java.util.Arrays.equals(privateData, c.privateData)
                && responderResources == c.responderResources && initiatorDepth == c.initiatorDepth
                && flowControl == c.flowControl && retryCount == c.retryCount && rnrRetryCount == c.rnrRetryCount
                && srq == c.srq && qpNumber == c.qpNumber;
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(privateData) * 31 + qpNumber;
    }

    @Override
    public String toString() {
        return "ConnectionParameters[privateData=" + privateData.length + " bytes, responderResources="
                + responderResources + ", initiatorDepth=" + initiatorDepth + ", retryCount=" + retryCount
                + ", rnrRetryCount=" + rnrRetryCount + ", qpNumber=" + qpNumber + "]";
    }
}
