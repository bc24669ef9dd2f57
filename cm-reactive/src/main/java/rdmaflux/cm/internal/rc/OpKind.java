package rdmaflux.cm.internal.rc;

import rdmaflux.verbs.RemoteBuffer;

/** What a send-queue operation is. */
public enum OpKind {
    SEND, CONTROL, CLOSE, READ, WRITE, WRITE_IMM, CAS, FAA,
    /** A large message's descriptor (its sink completes when the peer finished reading it). */
    LARGE,
    /** The RDMA READ of a peer's large message. */
    LARGE_READ,
    /** The bind of a {@link WindowGrant}'s memory window (its sink gets the window's {@link RemoteBuffer}). */
    BIND,
    /** The local invalidate of a {@link WindowGrant}'s key. */
    INVALIDATE
}
