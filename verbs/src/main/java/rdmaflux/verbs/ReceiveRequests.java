package rdmaflux.verbs;

import rdmaflux.verbs.ffi.ibv_recv_wr;

/**
 * A reusable batch of receive work requests ({@code struct ibv_recv_wr}) for
 * {@link QueuePair#postReceive(ReceiveRequests, int)} and {@link SharedReceiveQueue#postReceive}.
 */
public final class ReceiveRequests extends WorkRequestBatch<ReceiveRequests> {
    private static final long WR_ID = ibv_recv_wr.wr_id$offset();

    /**
     * Allocates a batch.
     *
     * @param capacity requests per post
     * @param maxSge scatter/gather entries per request
     */
    public ReceiveRequests(int capacity, int maxSge) {
        super(capacity, maxSge, ibv_recv_wr.sizeof(), ibv_recv_wr.layout().byteAlignment(), WR_ID,
                ibv_recv_wr.next$offset(), ibv_recv_wr.sg_list$offset(), ibv_recv_wr.num_sge$offset());
    }

    /**
     * Starts request {@code i} and clears its scatter/gather entries.
     *
     * @param i request index
     * @param wrId returned in the completion
     * @return this
     */
    public ReceiveRequests set(int i, long wrId) {
        putLong(offset(i) + WR_ID, wrId);
        resetSges(i);
        return this;
    }

    @Override
    void linkExtra(long wrOffset, int i) {
        // Receive requests keep nothing else on the Java side.
    }

    RdmaException postFailure(String operation, int errno) {
        return postFailure(operation, errno, WR_ID);
    }
}
