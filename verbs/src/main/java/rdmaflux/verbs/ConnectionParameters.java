package rdmaflux.verbs;

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
    /** No private data: shared, as nothing ever writes to the array a record holds. */
    static final byte[] NO_DATA = new byte[0];

    /** What rping and most rdma-core examples use: one read in flight each way, retry forever on RNR. */
    public static final ConnectionParameters DEFAULTS = new ConnectionParameters(NO_DATA, 1, 1, false, 7, 7,
            false, 0);

    /** Validates and copies the private data. */
    public ConnectionParameters {
        privateData = privateData == null || privateData.length == 0 ? NO_DATA : privateData.clone();
        if (privateData.length > 255) {
            throw new IllegalArgumentException("private data is limited to 255 bytes (56 on connect, 196 on accept), got "
                    + privateData.length);
        }
        if (retryCount < 0 || retryCount > 7 || rnrRetryCount < 0 || rnrRetryCount > 7) {
            throw new IllegalArgumentException("retry counts are 3-bit values: " + retryCount + ", " + rnrRetryCount);
        }
    }

    /** {@return a copy of the private data} */
    @Override
    public byte[] privateData() {
        return privateData.length == 0 ? NO_DATA : privateData.clone();
    }

    /**
     * Replaces the private data.
     *
     * @param data new private data
     * @return a copy with that private data
     */
    public ConnectionParameters withPrivateData(byte[] data) {
        return new ConnectionParameters(data, responderResources, initiatorDepth, flowControl, retryCount,
                rnrRetryCount, srq, qpNumber);
    }

    /**
     * Writes this as a {@code struct rdma_conn_param} into {@code p}, its private data into {@code data}.
     *
     * @param p at least {@code sizeof(struct rdma_conn_param)} bytes; fully overwritten
     * @param data room for the private data; untouched when there is none
     * @return {@code p}
     */
    MemorySegment writeTo(MemorySegment p, MemorySegment data) {
        // Assembled in longs and copied once: a handful of array stores instead of a native store per field.
        long[] image = new long[Layout.IMAGE_LONGS];
        if (privateData.length > 0) {
            MemorySegment.copy(privateData, 0, data, ValueLayout.JAVA_BYTE, 0, privateData.length);
            NativeImage.put(image, Layout.DATA_PTR, 8, data.address());
        }
        NativeImage.put(image, Layout.DATA_LEN, 1, privateData.length);
        NativeImage.put(image, Layout.RESPONDER_RESOURCES, 1, responderResources);
        NativeImage.put(image, Layout.INITIATOR_DEPTH, 1, initiatorDepth);
        NativeImage.put(image, Layout.FLOW_CONTROL, 1, flowControl ? 1 : 0);
        NativeImage.put(image, Layout.RETRY_COUNT, 1, retryCount);
        NativeImage.put(image, Layout.RNR_RETRY_COUNT, 1, rnrRetryCount);
        NativeImage.put(image, Layout.SRQ, 1, srq ? 1 : 0);
        NativeImage.put(image, Layout.QP_NUM, 4, qpNumber);
        MemorySegment.copy(image, 0, p, ValueLayout.JAVA_LONG, 0, Layout.IMAGE_LONGS);
        return p;
    }

    static ConnectionParameters fromNative(MemorySegment p) {
        byte[] data = copyPrivateData(rdma_conn_param.private_data(p), rdma_conn_param.private_data_len(p));
        return new ConnectionParameters(data, Byte.toUnsignedInt(rdma_conn_param.responder_resources(p)),
                Byte.toUnsignedInt(rdma_conn_param.initiator_depth(p)), rdma_conn_param.flow_control(p) != 0,
                rdma_conn_param.retry_count(p) & 7, rdma_conn_param.rnr_retry_count(p) & 7,
                rdma_conn_param.srq(p) != 0, rdma_conn_param.qp_num(p));
    }

    /**
     * Reads a {@code struct rdma_conn_param} from a copy of native memory (see {@link NativeImage}).
     *
     * @param image the copied longs
     * @param base the struct's byte offset within the image
     */
    static ConnectionParameters fromImage(long[] image, long base) {
        int len = (int) NativeImage.get(image, base + Layout.DATA_LEN, 1);
        long ptr = NativeImage.get(image, base + Layout.DATA_PTR, 8);
        byte[] data = len == 0 || ptr == 0 ? NO_DATA
                : MemorySegment.ofAddress(ptr).reinterpret(len).toArray(ValueLayout.JAVA_BYTE);
        return new ConnectionParameters(data, (int) NativeImage.get(image, base + Layout.RESPONDER_RESOURCES, 1),
                (int) NativeImage.get(image, base + Layout.INITIATOR_DEPTH, 1),
                NativeImage.get(image, base + Layout.FLOW_CONTROL, 1) != 0,
                (int) NativeImage.get(image, base + Layout.RETRY_COUNT, 1) & 7,
                (int) NativeImage.get(image, base + Layout.RNR_RETRY_COUNT, 1) & 7,
                NativeImage.get(image, base + Layout.SRQ, 1) != 0, (int) NativeImage.get(image, base + Layout.QP_NUM, 4));
    }

    static byte[] copyPrivateData(MemorySegment ptr, byte len) {
        int n = Byte.toUnsignedInt(len);
        if (n == 0 || ptr.equals(MemorySegment.NULL)) {
            return NO_DATA;
        }
        return ptr.reinterpret(n).toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * Field offsets of {@code struct rdma_conn_param}; a holder so that using the record never loads the
     * native bindings (which fail where rdma-core is not installed).
     */
    static final class Layout {
        static final long DATA_PTR = rdma_conn_param.private_data$offset();
        static final long DATA_LEN = rdma_conn_param.private_data_len$offset();
        static final long RESPONDER_RESOURCES = rdma_conn_param.responder_resources$offset();
        static final long INITIATOR_DEPTH = rdma_conn_param.initiator_depth$offset();
        static final long FLOW_CONTROL = rdma_conn_param.flow_control$offset();
        static final long RETRY_COUNT = rdma_conn_param.retry_count$offset();
        static final long RNR_RETRY_COUNT = rdma_conn_param.rnr_retry_count$offset();
        static final long SRQ = rdma_conn_param.srq$offset();
        static final long QP_NUM = rdma_conn_param.qp_num$offset();
        /** {@code struct rdma_conn_param}'s size in whole longs. */
        static final int IMAGE_LONGS = (int) ((rdma_conn_param.sizeof() + 7) / 8);

        private Layout() {
        }
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
