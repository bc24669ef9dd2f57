package rdmaflux.cm;


import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

import rdmaflux.verbs.Gid;

/**
 * One received UD datagram (multicast or unicast): a copy of its payload plus where it came from.
 *
 * <p><b>A copy, not a view.</b> The payload is copied out of the receive buffer on the completion
 * thread, so the buffer can be posted again without waiting for the application. UD has no flow
 * control: a receive buffer held by a slow consumer is a datagram the hardware drops, so the library
 * does not lend buffers out the way {@link RdmaMessage} does. A datagram is at most one path MTU
 * (1024 bytes on Soft-RoCE), so the copy is cheap. A {@code Datagram} needs no release and stays
 * valid forever.
 *
 * <p><b>Source.</b> UD receives carry a 40-byte global routing header (GRH) in front of the payload.
 * On RoCE v2 over IPv4 its last 20 bytes are the packet's IPv4 header; on IPv6 (and InfiniBand) it is
 * an IPv6-style header with source and destination GIDs. {@link #source()} and {@link #sourceGid()}
 * come from it; {@link #sourceQpn()} comes from the work completion.
 */
public final class Datagram {
    private static final VarHandle PENDING;

    static {
        try {
            PENDING = MethodHandles.lookup().findVarHandle(Datagram.class, "pending", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Bytes of the global routing header that UD receives put in front of the payload. */
    public static final int GRH_BYTES = 40;

    private final byte[] payload;
    private final int sourceQpn;
    private final Gid sourceGid;
    private final InetAddress source;
    private final InetAddress destination;
    private final boolean hasImmediate;
    private final int immediate;

    /** Credit bookkeeping: how many subscribers still have to see this datagram (the receive queue's credit returns when it reaches 0). */
    @SuppressWarnings("unused") // through PENDING
    private volatile int pending = 1;
    /** Returns the receive queue's credit; {@code null} for a datagram that holds none. */
    private final Runnable owner;

    Datagram(byte[] payload, int sourceQpn, Gid sourceGid, InetAddress source, InetAddress destination,
             boolean hasImmediate, int immediate, Runnable owner) {
        this.payload = payload;
        this.sourceQpn = sourceQpn;
        this.sourceGid = sourceGid;
        this.source = source;
        this.destination = destination;
        this.hasImmediate = hasImmediate;
        this.immediate = immediate;
        this.owner = owner;
    }

    /** Called once per subscriber that received or discarded this datagram; the last one frees its credit. */
    void consumed() {
        if ((int) PENDING.getAndAdd(this, -1) == 1 && owner != null) {
            owner.run();
        }
    }

    /** Adds a subscriber that has to see this datagram before its credit returns. */
    void retain() {
        PENDING.getAndAdd(this, 1);
    }

    /** {@return the payload, without the GRH} */
    public ByteBuffer data() {
        return ByteBuffer.wrap(payload).asReadOnlyBuffer();
    }

    /** {@return a copy of the payload} */
    public byte[] toByteArray() {
        return payload.clone();
    }

    /** {@return the payload length in bytes} */
    public int length() {
        return payload.length;
    }

    /** {@return the sender's QP number (24 bits)} */
    public int sourceQpn() {
        return sourceQpn;
    }

    /**
     * {@return the sender's GID from the GRH (an IPv4-mapped GID for RoCE v2 over IPv4), or {@code null}
     * when the datagram arrived without a GRH}
     */
    public Gid sourceGid() {
        return sourceGid;
    }

    /** {@return the sender's IP address from the GRH, or {@code null} without a GRH} */
    public InetAddress source() {
        return source;
    }

    /**
     * {@return the destination from the GRH: the multicast group for group datagrams, this side's address
     * for unicast ones; {@code null} without a GRH}
     */
    public InetAddress destination() {
        return destination;
    }

    /** {@return the 32-bit immediate data the sender attached (SEND_WITH_IMM), if any} */
    public OptionalInt immediate() {
        return hasImmediate ? OptionalInt.of(immediate) : OptionalInt.empty();
    }

    @Override
    public String toString() {
        return "Datagram[" + payload.length + " bytes from " + source + " qpn " + sourceQpn + " to " + destination
                + (hasImmediate ? ", imm 0x" + Integer.toHexString(immediate) : "") + "]";
    }
}
