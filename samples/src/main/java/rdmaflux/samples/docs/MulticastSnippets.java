package rdmaflux.samples.docs;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import rdmaflux.cm.Datagram;
import rdmaflux.cm.DatagramPeer;
import rdmaflux.cm.MulticastMembership;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.MulticastSender;
import rdmaflux.cm.RdmaDatagramEndpoint;
import rdmaflux.cm.RdmaMulticast;

/**
 * The examples of docs/multicast.md. Every method runs on the calling thread and blocks (with a
 * timeout) until its example is done; {@code DocSnippetsIT} runs each on real RDMA.
 */
public final class MulticastSnippets {
    private MulticastSnippets() {
    }

    /**
     * docs/multicast.md: receive a group's datagrams while a sender in this process sends 100.
     *
     * @param localAddress an IP address of the RDMA interface to use
     * @return the payloads received before the sender finished (all, some or none: the receiver's
     *         join may still be under way when the sender starts)
     * @throws java.net.UnknownHostException never: the group is a literal address
     */
    public static List<String> example(InetAddress localAddress) throws java.net.UnknownHostException {
        // tag::example[]
        InetAddress group = InetAddress.getByName("239.1.1.1");
        MulticastOptions options = MulticastOptions.builder()
                .localAddress(localAddress)                   // the RDMA interface to use
                .build();
        Duration timeout = Duration.ofSeconds(10);

        // Receive: subscribing joins, cancelling leaves (when no other subscriber in this process remains).
        List<String> received = new CopyOnWriteArrayList<>();
        Disposable listening = RdmaMulticast.joinMulticast(group, options)
                .subscribe(d -> received.add(new String(d.toByteArray(), StandardCharsets.UTF_8)));

        // Send: the sender has its own QP and join (send-only when the kernel allows). Datagrams sent
        // before the receiver's join is in place are lost: use join (below) to know when it is.
        MulticastSender sender = RdmaMulticast.sender(group, options).block(timeout);
        sender.send(Flux.range(0, 100).map(i -> ByteBuffer.wrap(("tick " + i).getBytes(StandardCharsets.UTF_8))))
                .block(timeout);
        sender.disposeNow(timeout);
        listening.dispose();
        // end::example[]
        return received;
    }

    /**
     * docs/multicast.md: join, then let a peer start sending, and handle ten datagrams.
     *
     * @param group the multicast group
     * @param options the local RDMA address and buffers
     * @param startRemoteSender asks the peer to start sending
     * @param handle gets each datagram
     */
    public static void join(InetAddress group, MulticastOptions options, Runnable startRemoteSender,
                            Consumer<Datagram> handle) {
        // tag::join[]
        Duration timeout = Duration.ofSeconds(10);
        MulticastMembership m = RdmaMulticast.join(group, options).block(timeout);
        startRemoteSender.run();                   // anything sent from now on is received
        m.datagrams().take(10).doOnNext(handle).blockLast(timeout);
        m.disposeNow(timeout);                     // the last share leaves the group
        // end::join[]
    }

    /**
     * docs/multicast.md: unicast datagrams the way rdma-core's udaddy sends them: an echo endpoint and a
     * client that resolves it and sends one datagram.
     *
     * @param address an IP address of an RDMA interface
     * @return the echo the client received, or null when none came within 10 s
     * @throws InterruptedException when interrupted while waiting for the echo
     */
    public static String unicast(InetAddress address) throws InterruptedException {
        // tag::unicast[]
        Duration timeout = Duration.ofSeconds(10);
        RdmaDatagramEndpoint server = RdmaDatagramEndpoint.bind(new InetSocketAddress(address, 7174)).block(timeout);
        server.receive().concatMap(d -> server.send(server.peerOf(d), d.data())).subscribe();   // echo

        RdmaDatagramEndpoint client = RdmaDatagramEndpoint.bind(new InetSocketAddress(address, 0)).block(timeout);
        DatagramPeer peer = client.resolve(server.localAddress()).block(timeout);   // SIDR: QPN + qkey + address handle
        BlockingQueue<Datagram> replies = new LinkedBlockingQueue<>();
        client.receive().subscribe(replies::add);
        client.send(peer, ByteBuffer.wrap("ping".getBytes(StandardCharsets.UTF_8))).block(timeout);
        Datagram reply = replies.poll(10, TimeUnit.SECONDS);                        // null if none came
        client.disposeNow(timeout);
        server.disposeNow(timeout);
        // end::unicast[]
        return reply == null ? null : new String(reply.toByteArray(), StandardCharsets.UTF_8);
    }
}
