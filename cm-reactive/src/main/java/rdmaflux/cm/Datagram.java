package rdmaflux.cm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.Arrays;
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
    private static final VarHandle PENDING = FieldHandles.of(MethodHandles.lookup(), Datagram.class, "pending",
            int.class);

    /** Bytes of the global routing header that UD receives put in front of the payload. */
    public static final int GRH_BYTES = 40;

    private final byte[] payload;
    private final int sourceQpn;
    private final Gid sourceGid;
    private final InetAddress source;
    private final InetAddress destination;
    private final boolean hasImmediate;
    private final int immediate;

    /** Credit bookkeeping: how many subscribers still have to see this datagram (see {@link UdQueue}). */
    @SuppressWarnings("unused") // through PENDING
    private volatile int pending = 1;
    private final UdQueue owner;

    Datagram(byte[] payload, int sourceQpn, Gid sourceGid, InetAddress source, InetAddress destination,
             boolean hasImmediate, int immediate, UdQueue owner) {
        this.payload = payload;
        this.sourceQpn = sourceQpn;
        this.sourceGid = sourceGid;
        this.source = source;
        this.destination = destination;
        this.hasImmediate = hasImmediate;
        this.immediate = immediate;
        this.owner = owner;
    }

    /**
     * Copies a received datagram out of its receive buffer.
     *
     * @param buffer the receive buffers
     * @param at where this one starts, GRH first when {@code grh}
     * @param byteLength the completion's byte count (GRH included)
     * @param grh whether the completion says a GRH is present
     * @param addresses the queue's parsed source and destination addresses
     */
    static Datagram fromReceive(MemorySegment buffer, long at, int byteLength, boolean grh, int sourceQpn,
                                boolean hasImmediate, int immediate, GrhAddresses addresses, UdQueue owner) {
        int offset = grh ? GRH_BYTES : 0;
        int length = Math.max(0, byteLength - offset);
        byte[] payload = new byte[length];
        MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, at + offset, payload, 0, length);
        Addresses a = grh ? addresses.of(buffer, at) : null;
        return a == null ? new Datagram(payload, sourceQpn & 0xFFFFFF, null, null, null, hasImmediate, immediate, owner)
                : new Datagram(payload, sourceQpn & 0xFFFFFF, a.sourceGid, a.source, a.destination, hasImmediate,
                        immediate, owner);
    }

    record Addresses(Gid sourceGid, InetAddress source, InetAddress destination) {
    }

    /**
     * Reads the addresses from a 40-byte GRH as the device wrote it: RoCE v2 over IPv4 puts the IPv4
     * header in bytes 20..39 (the first 20 are zero); otherwise bytes 8..23 and 24..39 are the source and
     * destination GIDs of an IPv6/IB GRH.
     */
    static Addresses parseGrh(byte[] h) {
        if (h.length != GRH_BYTES) {
            throw new IllegalArgumentException("a GRH has 40 bytes, got " + h.length);
        }
        if (isIpv4Grh(MemorySegment.ofArray(h), 0)) {
            byte[] src = Arrays.copyOfRange(h, 32, 36);
            byte[] dst = Arrays.copyOfRange(h, 36, 40);
            byte[] mapped = new byte[16];
            mapped[10] = (byte) 0xFF;
            mapped[11] = (byte) 0xFF;
            System.arraycopy(src, 0, mapped, 12, 4);
            return new Addresses(Gid.of(mapped), inet(src), inet(dst));
        }
        Gid sgid = Gid.of(Arrays.copyOfRange(h, 8, 24));
        Gid dgid = Gid.of(Arrays.copyOfRange(h, 24, 40));
        return new Addresses(sgid, sgid.toInetAddress(), dgid.toInetAddress());
    }

    /** {@return whether the GRH at {@code offset} carries an IPv4 header (RoCE v2 over IPv4): 20 zero bytes, then version 4} */
    static boolean isIpv4Grh(MemorySegment buffer, long offset) {
        for (int i = 0; i < 20; i++) {
            if (buffer.get(ValueLayout.JAVA_BYTE, offset + i) != 0) {
                return false;
            }
        }
        return (buffer.get(ValueLayout.JAVA_BYTE, offset + 20) & 0xF0) == 0x40;
    }

    private static InetAddress inet(byte[] raw) {
        try {
            return InetAddress.getByAddress(raw);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    /** Called once per subscriber that received or discarded this datagram; the last one frees its credit. */
    void consumed() {
        if ((int) PENDING.getAndAdd(this, -1) == 1 && owner != null) {
            owner.creditReturned();
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
