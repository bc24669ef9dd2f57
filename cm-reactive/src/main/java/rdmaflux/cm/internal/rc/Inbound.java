package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.Step;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.util.concurrent.Queues;
import rdmaflux.verbs.WcOpcode;
import rdmaflux.verbs.WorkCompletions;

/**
 * What one RC connection does with each successful receive: checks what the peer controls (immediate
 * data, length, descriptor) against the protocol and the {@link CreditWindow}, counts it, hands large
 * messages to the {@link Rendezvous}, and emits the rest on the inbound sink, in order.
 *
 * <p>Threads: the completion loop (or the holder of the connection's {@link ConnectionLock} draining the CQ
 * for it) delivers; the credit window, the rendezvous and the send side are touched under the lock. The
 * sink has one subscriber, the connection's {@code receive()}.
 */
public final class Inbound {
    private static final ValueLayout.OfLong BIG_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BIG_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private final ConnectionOptions options;
    private final RdmaRecorder recorder;
    private final boolean credits;
    /** Whether the application gets the receive slots themselves ({@link ConnectionOptions#recycledMessages()}). */
    private final boolean recycled;
    private final ConnectionLock lock;
    private final CreditWindow window;
    private final Rendezvous rendezvous;
    private final SendQueue sends;
    private final ControlMessages controls;
    private final Receives receives;
    private final Sinks.Many<RdmaMessage> sink;
    /** Guarded by the lock (written while completions are dispatched). */
    private boolean peerClosed;
    /** The peer's protocol violation the connection failed with, or null; completion loop. */
    private RdmaCmException.ProtocolViolation violation;
    /** Whether the peer speaks large messages; set before the queue is started. */
    private volatile boolean largeMessages;

    /**
     * @param bufferedMessages how many messages the sink may hold for a slow subscriber (every receive)
     */
    Inbound(ConnectionOptions options, RdmaRecorder recorder, ConnectionLock lock, CreditWindow window,
            Rendezvous rendezvous, SendQueue sends, ControlMessages control, Receives receives,
            int bufferedMessages) {
        this.options = options;
        this.recorder = recorder;
        this.credits = options.protocol() == ConnectionOptions.Protocol.CREDITS;
        this.recycled = options.recycledMessages();
        this.lock = lock;
        this.window = window;
        this.rendezvous = rendezvous;
        this.sends = sends;
        this.controls = control;
        this.receives = receives;
        this.sink = Sinks.many().unicast().onBackpressureBuffer(Queues.<RdmaMessage>get(bufferedMessages).get());
    }

    /** {@return the received messages, in order; one subscriber} */
    Flux<RdmaMessage> flux() {
        return sink.asFlux();
    }

    /** CM loop, before the queue starts: whether the peer agreed on large messages. */
    void largeMessages(boolean agreed) {
        largeMessages = agreed;
    }

    /** {@return whether the peer agreed on large messages} */
    boolean largeMessages() {
        return largeMessages;
    }

    /** {@return whether the peer's orderly close arrived; under the lock or after the final drain} */
    boolean peerClosed() {
        return peerClosed;
    }

    /**
     * Completion loop: one successful receive. What the peer's bytes make of this connection fails it
     * alone: never the completion loop, nor the completions polled with this one (other connections'
     * included). After a violation nothing more the peer sends is believed.
     *
     * @return the violation the connection must fail with now, or {@code null}
     */
    RdmaCmException.ProtocolViolation receive(ReceiveSlot slot, WorkCompletions wc, int i) {
        if (violation != null) {
            receives.failed(slot);
            return null;
        }
        try {
            received(slot, wc, i);
            return null;
        } catch (RuntimeException e) {
            receives.failed(slot);
            if (e instanceof RdmaCmException.ProtocolViolation v) {
                violation = v;
            } else {
                violation = new RdmaCmException.ProtocolViolation(Step.TRANSFER,
                        "its message broke the receiver (" + e + ")");
                violation.initCause(e);
            }
            return violation;
        }
    }

    /**
     * @throws RdmaCmException.ProtocolViolation when the peer broke the protocol (docs/protocol.md)
     */
    private void received(ReceiveSlot slot, WorkCompletions wc, int i) {
        int len = wc.byteLength(i);
        if (wc.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM) {
            if (credits) {
                lock.lock();
                try {
                    window.delivered();
                } finally {
                    lock.unlock();
                }
            }
            slot.deliver(0, true, wc.immediateData(i), credits);
            if (!rendezvous.queueBehindLarge(slot)) {
                emit(slot, 0);
            }
            return;
        }
        boolean lent = false;
        if (credits) {
            if (!wc.hasImmediate(i)) {
                throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "a SEND of " + len + " bytes without "
                        + "immediate data (every SEND of the credits protocol carries it)");
            }
            int imm = wc.immediateData(i);
            boolean control = (imm & Wire.CONTROL) != 0;
            boolean large = !control && (imm & Wire.LARGE) != 0;
            if (large) {
                checkDescriptor(slot, len);
            }
            lock.lock();
            try {
                int finished = (imm >>> Wire.FINISHED_SHIFT) & Wire.FINISHED;
                if (finished > 0) {
                    rendezvous.finished(finished);
                }
                window.grant(imm & Wire.CREDITS);
                if (control) {
                    if ((imm & Wire.CLOSE) != 0) {
                        peerClosed = true;
                    }
                    receives.repost(slot);
                    sends.drainPending();
                    return;
                }
                window.delivered();
                if (large) {
                    slot.deliver(len, false, 0, true);
                    MemorySegment d = slot.data();
                    rendezvous.arrived(slot, d.get(BIG_LONG, 0), d.get(BIG_INT, 8), d.get(BIG_INT, 12));
                    sends.drainPending();
                    return;
                }
                // On a shared pool, the credit of a message the application will hold may go back now.
                lent = receives.lend(slot);
                if (lent) {
                    window.released();
                }
                sends.drainPending();
                if (lent) {
                    controls.maybeReturnCredits();
                }
            } finally {
                lock.unlock();
            }
        }
        slot.deliver(len, false, 0, credits && !lent);
        if (!rendezvous.queueBehindLarge(slot)) {
            emit(slot, len);
        }
    }

    /**
     * Completion loop: a large message's descriptor (docs/protocol.md) is valid, before it counts.
     *
     * @throws RdmaCmException.ProtocolViolation when it is not
     */
    private void checkDescriptor(ReceiveSlot slot, int len) {
        int length = len == Wire.DESCRIPTOR ? slot.rawData().get(BIG_INT, 12) : 0;
        if (!largeMessages || len != Wire.DESCRIPTOR || length <= 0) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "a large-message descriptor of " + len
                    + " bytes announcing " + length + " bytes" + (largeMessages ? ""
                    : " on a connection that did not agree on large messages"));
        }
        if (length > options.maxInboundMessageSize()) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "a message of " + length
                    + " bytes, more than this side accepts (ConnectionOptions.maxInboundMessageSize "
                    + options.maxInboundMessageSize() + ")");
        }
    }

    /**
     * Hands a message to the application (a slot as a {@link ReceiveSlot#lend() lent view}); released at
     * once when the sink refuses it.
     *
     * @param message the message
     * @param len its length, for the recorder
     */
    void emit(RdmaMessage message, int len) {
        recorder.messageReceived(len);
        // The application holds one delivery, never the slot, which takes newer messages; unless the options
        // trade that for no allocation per message.
        RdmaMessage out = message instanceof ReceiveSlot slot && !recycled ? slot.lend() : message;
        if (sink.tryEmitNext(out).isFailure()) {
            out.release();
        }
    }

    /**
     * Completion loop, after the final drain: {@code receive()} ends.
     *
     * @param end the failure, or {@code null} for an orderly end
     */
    void end(Throwable end) {
        if (end != null) {
            sink.tryEmitError(end);
        } else {
            sink.tryEmitComplete();
        }
    }
}
