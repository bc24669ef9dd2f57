/**
 * Reactive RDMA over the connection manager: the API of rdmaflux.
 *
 * <p><b>Connections.</b> {@link rdmaflux.cm.RdmaConnection#connect(java.net.InetSocketAddress) RdmaConnection.connect}
 * and {@link rdmaflux.cm.RdmaServer#bind(java.net.InetSocketAddress) RdmaServer.bind} make reliable connections
 * (RC queue pairs) configured by {@link rdmaflux.cm.ConnectionOptions} and {@link rdmaflux.cm.ServerOptions}.
 * A connection sends {@link java.nio.ByteBuffer}s or {@link rdmaflux.cm.RegisteredBuffer}s, receives
 * {@link rdmaflux.cm.RdmaMessage}s (release each one), reads and writes registered memory of its peer and
 * hands out {@link rdmaflux.cm.RdmaGrant}s for it. Its life is a {@link rdmaflux.cm.ConnectionState} per
 * {@link rdmaflux.cm.Step}; failures are typed {@link rdmaflux.cm.RdmaCmException}s.
 *
 * <p><b>Datagrams and multicast.</b> {@link rdmaflux.cm.RdmaDatagramEndpoint} (unreliable datagrams to
 * resolved {@link rdmaflux.cm.DatagramPeer}s) and {@link rdmaflux.cm.RdmaMulticast} (joins and senders of
 * multicast groups) deliver {@link rdmaflux.cm.Datagram}s; their options are
 * {@link rdmaflux.cm.DatagramOptions} and {@link rdmaflux.cm.MulticastOptions}.
 *
 * <p><b>Threads.</b> {@link rdmaflux.cm.RdmaLoops} are the threads everything runs on: a connection-manager
 * loop, completion loops and the signal threads that run application code by default. Loop threads run
 * rdmaflux code only and never block; every signal reaches the application on the options' scheduler.
 *
 * <p><b>Implementation.</b> This package and {@code rdmaflux.cm.rsocket} are the module's exported packages.
 * The implementation lives in packages under {@code rdmaflux.cm.internal} that the module does not export,
 * one per concern (connection lifecycle, the RC data path, completion queues, loops, datagrams, memory);
 * docs/architecture.md describes them and the thread each runs on.
 */
package rdmaflux.cm;
