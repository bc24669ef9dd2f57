package rdmaflux.verbs;

/**
 * A snapshot from {@code ibv_query_qp}.
 *
 * @param state current state
 * @param pathMtu path MTU (RC/UC after RTR)
 * @param destQpNumber remote QP number (RC/UC)
 * @param qkey queue key (UD)
 * @param sqPsn send PSN
 * @param rqPsn receive PSN
 * @param port port number
 * @param timeout encoded ACK timeout
 * @param retryCount transport retries
 * @param rnrRetry RNR retries
 * @param minRnrTimer encoded RNR timer
 * @param maxSendWr send queue depth
 * @param maxReceiveWr receive queue depth
 * @param maxInlineData inline limit
 */
public record QpAttributes(QpState state, Mtu pathMtu, int destQpNumber, int qkey, int sqPsn, int rqPsn, int port,
                           int timeout, int retryCount, int rnrRetry, int minRnrTimer, int maxSendWr,
                           int maxReceiveWr, int maxInlineData) {
}
