/**
 * An RSocket transport over RDMA: {@link rdmaflux.cm.rsocket.RdmaClientTransport} and
 * {@link rdmaflux.cm.rsocket.RdmaServerTransport} implement rsocket-java's {@code ClientTransport} and
 * {@code ServerTransport}, so an RSocket (or Spring {@code RSocketRequester}) application moves to RDMA by
 * changing the transport it names.
 *
 * <p>Each RSocket frame travels as one rdmaflux message (frames of any size: a large one goes by the
 * connection's rendezvous, see docs/protocol.md), so no length prefix and no RSocket fragmentation is needed.
 * Received frames are {@code ByteBuf}s over the received memory, without a copy; releasing the last
 * reference releases the message, which returns its receive buffer and, through the credit protocol, lets
 * the peer send again: a subscriber that holds frames slows its sender.
 *
 * <p>{@code io.rsocket:rsocket-core} (and Netty's buffers, which it brings) is an optional dependency of
 * this module: add it to use this package.
 */
package rdmaflux.cm.rsocket;
