package rdmaflux.samples.pingpong;

import rdmaflux.verbs.QpType;

/** The four libibverbs pingpong examples that share {@link PingPongSession} and {@link PingPongLoop}. */
enum PingPongKind {
    /** {@code ibv_rc_pingpong}: one reliable-connected QP. */
    RC(QpType.RC),
    /** {@code ibv_uc_pingpong}: one unreliable-connected QP. */
    UC(QpType.UC),
    /** {@code ibv_ud_pingpong}: one datagram QP, an address handle, 40 bytes of GRH before each receive. */
    UD(QpType.UD),
    /** {@code ibv_srq_pingpong}: several RC QPs whose receives come from one shared receive queue. */
    SRQ(QpType.RC);

    /** Bytes a UD receive starts with: the global route header, present or not. */
    static final int GRH = 40;

    final QpType qpType;

    PingPongKind(QpType qpType) {
        this.qpType = qpType;
    }

    /** {@return where in the buffer the message data starts (sent from, and received into after the GRH)} */
    int dataOffset() {
        return this == UD ? GRH : 0;
    }
}
