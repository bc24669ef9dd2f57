package rdmaflux.cm;

import java.net.InetAddress;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One share of a joined multicast group, from {@link RdmaMulticast#join}. All memberships of a group
 * (per local address) in this process share one join and one UD QP; each membership sees every
 * datagram the group receives from the moment it was handed out. {@link #dispose()} gives the share
 * back; the last one leaves the group ({@code rdma_leave_multicast}) and frees the QP.
 */
public interface MulticastMembership extends RdmaDisposable {

    /** {@return the group} */
    InetAddress group();

    /**
     * The group's datagrams, on {@link MulticastOptions#scheduler() MulticastOptions.scheduler()}. One
     * subscriber per membership. Datagrams that arrive before the subscription are kept (up to the receive
     * buffers). Completes when the membership is disposed; fails with {@link RdmaMulticastException.JoinError}
     * if the group fails.
     *
     * @return the datagrams
     */
    Flux<Datagram> datagrams();

    /** {@return the largest datagram payload the group's port carries (its active MTU)} */
    int maxDatagramSize();

    /** {@return the group's qkey from the join} */
    int qkey();

    /** {@return the number of the shared QP attached to the group} */
    int qpNumber();

    /** {@return the RDMA device the group was joined on} */
    String deviceName();

    /** {@return the device port the group was joined on} */
    int portNumber();

    /** {@return completes when this share is released; for the last one, after the group was left and freed} */
    Mono<Void> onDispose();
}
