package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.internal.lifecycle.ConnectionStateMachine.Role;
import rdmaflux.cm.internal.rc.RcQueue;

import java.net.InetSocketAddress;

/**
 * What the lifecycle hands the connection's facade ({@link Connection}) once it is established: it never
 * changes after that, so the facade reads it on any thread without asking the lifecycle.
 *
 * @param queue the data path
 * @param local this side's address
 * @param remote the peer's address
 * @param peerData the peer's private data (the application's part of its hello); not to be changed
 * @param peerBufferSize the peer's receive buffer size: the largest eager message it takes
 * @param role whether this side connected or accepted
 */
record Established(RcQueue queue, InetSocketAddress local, InetSocketAddress remote, byte[] peerData,
                   int peerBufferSize, Role role) {
}
