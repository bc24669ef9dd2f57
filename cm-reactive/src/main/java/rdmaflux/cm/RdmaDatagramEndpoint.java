package rdmaflux.cm;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A UD endpoint for unicast datagrams, in the style of rdma-core's {@code udaddy}: bound to an address
 * and port of the UDP port space, it answers other endpoints' resolves (SIDR) with its QP number, and
 * resolves peers' addresses to QPN, qkey and address handle itself.
 *
 * <pre>{@code
 * RdmaDatagramEndpoint a = RdmaDatagramEndpoint.bind(new InetSocketAddress("192.0.2.1", 7174)).block();
 * RdmaDatagramEndpoint b = RdmaDatagramEndpoint.bind(new InetSocketAddress("192.0.2.1", 0)).block();
 * a.receive().flatMap(d -> a.send(a.peerOf(d), d.data())).subscribe();   // echo
 * DatagramPeer peer = b.resolve(a.localAddress()).block();
 * b.send(peer, ByteBuffer.wrap("ping".getBytes())).block();
 * }</pre>
 *
 * <p>Threads, loss and backpressure work as for multicast (see {@link RdmaMulticast}): signals arrive
 * on {@link DatagramOptions#scheduler() DatagramOptions.scheduler()}, at most
 * {@link DatagramOptions#receiveBuffers() DatagramOptions.receiveBuffers()} datagrams are posted or waiting, and
 * what arrives beyond that is dropped by the device.
 */
public interface RdmaDatagramEndpoint extends RdmaDisposable {

    /**
     * Binds with default options.
     *
     * @param local an address of an RDMA interface and a port (0 picks one)
     * @return the endpoint
     */
    static Mono<RdmaDatagramEndpoint> bind(InetSocketAddress local) {
        return bind(local, DatagramOptions.defaults());
    }

    /**
     * Binds an endpoint: a UDP-port-space CM id bound and listening on {@code local}, and a UD QP with
     * the CM's UDP qkey.
     *
     * @param local an address of an RDMA interface (not the wildcard) and a port (0 picks one)
     * @param options buffers, timeouts, scheduler
     * @return the endpoint; fails with an {@link rdmaflux.verbs.RdmaException} when the address is no
     *         RDMA interface's or the port is taken
     */
    static Mono<RdmaDatagramEndpoint> bind(InetSocketAddress local, DatagramOptions options) {
        return Implementation.bindDatagram(local, options);
    }

    /** {@return the bound address and port} */
    InetSocketAddress localAddress();

    /** {@return this endpoint's QP number (the {@link Datagram#sourceQpn()} peers see)} */
    int qpNumber();

    /** {@return this endpoint's qkey ({@code RDMA_UDP_QKEY}, 0x01234567)} */
    int qkey();

    /** {@return the largest datagram payload: the port's active MTU} */
    int maxDatagramSize();

    /**
     * Resolves a bound endpoint (ours or udaddy's) at {@code remote}: address and route resolution,
     * then a SIDR request that the peer answers with its QP number and qkey.
     *
     * @param remote the peer's address and port
     * @return the peer; fails with {@link RdmaCmException} subtypes ({@link RdmaCmException.Unreachable}
     *         when nothing is bound there) or {@link RdmaCmException.StepTimeout}
     */
    Mono<DatagramPeer> resolve(InetSocketAddress remote);

    /**
     * The sender of a received datagram, to reply to: an address handle to its source GID and its
     * source QP number, with the CM's UDP qkey. Handles are cached per source GID. Creating one is a
     * short system call.
     *
     * @param received a datagram this endpoint received
     * @return the peer
     */
    DatagramPeer peerOf(Datagram received);

    /**
     * Sends one datagram.
     *
     * @param peer from this endpoint's {@link #resolve} or {@link #peerOf}
     * @param datagram at most {@link #maxDatagramSize()} bytes, copied when posted
     * @return completes when the device finished the send; {@link IllegalArgumentException} for an
     *         oversized datagram or a foreign peer
     */
    Mono<Void> send(DatagramPeer peer, ByteBuffer datagram);

    /**
     * Sends one datagram with 32-bit immediate data (SEND_WITH_IMM), which the receiver sees as
     * {@link Datagram#immediate()}. udaddy and mckey use it to carry the sender's QP number.
     *
     * @param peer the destination
     * @param datagram the payload
     * @param immediate the immediate data
     * @return completes when the device finished the send
     */
    Mono<Void> send(DatagramPeer peer, ByteBuffer datagram, int immediate);

    /**
     * The datagrams sent to this endpoint, on {@link DatagramOptions#scheduler() DatagramOptions.scheduler()};
     * one subscriber. Completes when the endpoint is disposed; fails with {@link RdmaCmException.DeviceRemoved}
     * when its device goes away (the endpoint is then closed, and its sends fail with that too).
     *
     * @return the datagrams
     */
    Flux<Datagram> receive();

    /** {@return completes when everything is freed after {@link #dispose()}} */
    Mono<Void> onDispose();
}
