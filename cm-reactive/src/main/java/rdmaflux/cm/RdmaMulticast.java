package rdmaflux.cm;

import java.net.InetAddress;
import java.util.Objects;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Multicast over RDMA unreliable datagrams: join a group and receive its datagrams as a {@link Flux},
 * or send to it with a {@link MulticastSender}.
 *
 * <pre>{@code
 * InetAddress group = InetAddress.getByName("239.1.1.1");
 * MulticastOptions options = MulticastOptions.builder().localAddress(InetAddress.getByName("192.0.2.1")).build();
 * Disposable listening = RdmaMulticast.joinMulticast(group, options)
 *         .subscribe(d -> System.out.println(d.length() + " bytes from " + d.source() + " qpn " + d.sourceQpn()));
 * MulticastSender sender = RdmaMulticast.sender(group, options).block();
 * sender.send(ByteBuffer.wrap("hello".getBytes())).block();
 * sender.dispose();
 * listening.dispose();          // the last subscriber leaves the group
 * }</pre>
 *
 * <p><b>Threads.</b> Connection manager events and completions are handled on the library's CM and
 * completion threads; every signal reaches user code on
 * {@link MulticastOptions#scheduler() MulticastOptions.scheduler()}.
 *
 * <p><b>Sharing.</b> Subscribers to the same group (and local address) in one process share one join
 * and one UD QP, reference counted: the first subscription joins, the last cancellation leaves
 * ({@code rdma_leave_multicast}) and frees the QP. Each subscriber gets every datagram.
 *
 * <p><b>Loss.</b> UD is unreliable. At most
 * {@link MulticastOptions#receiveBuffers() MulticastOptions.receiveBuffers()} datagrams are posted or waiting
 * for subscribers; when every subscriber's demand is exhausted no receive is
 * reposted and the device drops what arrives (see docs/multicast.md for how to count such drops).
 */
public final class RdmaMulticast {
    private RdmaMulticast() {
    }

    /**
     * Joins a group with default options and emits its datagrams.
     *
     * @param group an IPv4 or IPv6 multicast address
     * @return the datagrams; cancel to leave
     */
    public static Flux<Datagram> joinMulticast(InetAddress group) {
        return joinMulticast(group, MulticastOptions.defaults());
    }

    /**
     * Joins a group and emits its datagrams: subscribing joins (or shares an existing join of this
     * process), cancelling leaves when no other subscriber remains.
     *
     * @param group an IPv4 or IPv6 multicast address
     * @param options local address, buffers, timeouts, scheduler
     * @return the datagrams; fails with {@link IllegalArgumentException} for a non-multicast address,
     *         {@link RdmaCmException.AddressError} when no RDMA device reaches the group,
     *         {@link RdmaMulticastException.JoinError} (MULTICAST_ERROR) or
     *         {@link RdmaMulticastException.JoinTimeout}
     */
    public static Flux<Datagram> joinMulticast(InetAddress group, MulticastOptions options) {
        return Flux.usingWhen(join(group, options), MulticastMembership::datagrams,
                m -> Mono.fromRunnable(m::dispose));
    }

    /**
     * Joins a group (or takes a share of this process's join) and hands out the membership once
     * MULTICAST_JOIN arrived: use it when the application must know the join is in place before
     * something else happens, e.g. before telling a peer to start sending.
     *
     * @param group an IPv4 or IPv6 multicast address
     * @param options local address, buffers, timeouts, scheduler
     * @return the membership; dispose it to give the share back. Errors as {@link #joinMulticast(InetAddress,
     *         MulticastOptions)}.
     */
    public static Mono<MulticastMembership> join(InetAddress group, MulticastOptions options) {
        Objects.requireNonNull(options, "options");
        IllegalArgumentException bad = check(group);
        return bad != null ? Mono.error(bad) : Implementation.join(group, options);
    }

    /**
     * Joins a group for sending (send-only when the kernel allows; see {@link MulticastSender#isSendOnly()}).
     *
     * @param group an IPv4 or IPv6 multicast address
     * @param options local address, send buffers, timeouts, scheduler
     * @return the sender once joined; errors as {@link #joinMulticast(InetAddress, MulticastOptions)}
     */
    public static Mono<MulticastSender> sender(InetAddress group, MulticastOptions options) {
        Objects.requireNonNull(options, "options");
        IllegalArgumentException bad = check(group);
        return bad != null ? Mono.error(bad) : Implementation.sender(group, options);
    }

    private static IllegalArgumentException check(InetAddress group) {
        Objects.requireNonNull(group, "group");
        if (!group.isMulticastAddress()) {
            return new IllegalArgumentException(group.getHostAddress() + " is not a multicast address (IPv4 "
                    + "224.0.0.0/4, IPv6 ff00::/8)");
        }
        return null;
    }
}
