package rdmaflux.cm;

import java.net.InetAddress;
import java.nio.ByteBuffer;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * Sends datagrams to a multicast group, from {@link RdmaMulticast#sender}: its own UD QP and join
 * (send-only when the kernel allows, see {@link #isSendOnly()}), UD sends to QPN 0xFFFFFF with the
 * group's qkey and the address handle from the join. {@link #dispose()} leaves the group and frees
 * everything; sends still in flight fail.
 *
 * <p>UD is unreliable: a completed send means the datagram left, not that anyone received it. Members
 * with no receive posted when it arrives never see it.
 */
public interface MulticastSender extends RdmaDisposable {

    /** {@return the group} */
    InetAddress group();

    /**
     * {@return whether this sender joined as a send-only full member (its QP is not attached to the
     * group and receives nothing); {@code false} after a refused send-only join or when
     * {@link MulticastOptions#sendOnly()} is off}
     */
    boolean isSendOnly();

    /** {@return the largest datagram payload: the port's active MTU} */
    int maxDatagramSize();

    /** {@return the group's qkey from the join} */
    int qkey();

    /** {@return this sender's QP number (the {@link Datagram#sourceQpn()} receivers see)} */
    int qpNumber();

    /**
     * Sends one datagram to the group. The bytes between position and limit are copied when the send
     * is posted (after subscription, possibly later if every send buffer is busy); don't change them
     * until the Mono ends.
     *
     * @param datagram at most {@link #maxDatagramSize()} bytes
     * @return completes when the device finished the send; {@link IllegalArgumentException} for an
     *         oversized datagram (before anything is posted), {@link IllegalStateException} after dispose
     */
    Mono<Void> send(ByteBuffer datagram);

    /**
     * Sends datagrams in order, keeping up to {@link MulticastOptions#sendBuffers() MulticastOptions.sendBuffers()}
     * in flight.
     *
     * @param datagrams the payloads
     * @return completes when all were sent, or fails with the first failure
     */
    Mono<Void> send(Publisher<? extends ByteBuffer> datagrams);

    /** {@return completes when the group was left and everything freed} */
    Mono<Void> onDispose();
}
