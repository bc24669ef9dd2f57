package rdmaflux.samples.ping;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import rdmaflux.verbs.RemoteBuffer;

/**
 * rping's only message, {@code struct rping_rdma_info}: 16 bytes, big-endian, no padding:
 * {@code __be64 buf} (virtual address), {@code __be32 rkey}, {@code __be32 size}.
 *
 * <p>The client sends it to advertise a buffer; the server sends it as its "go ahead", with
 * whatever its send buffer holds (all zeros in rping), so only the length of a "go" matters.
 *
 * @param address the buffer's virtual address in the sender's process
 * @param rkey the remote key of its registration
 * @param size its length in bytes (rping treats it as unsigned 32 bits)
 */
public record RpingInfo(long address, int rkey, int size) {
    /** Wire size: {@code sizeof(struct rping_rdma_info)}. */
    public static final int BYTES = 16;
    /** The server's "go ahead": rping sends its never-filled, zeroed send buffer. */
    public static final RpingInfo GO = new RpingInfo(0, 0, 0);

    /**
     * Describes a buffer as rping advertises it.
     *
     * @param buffer a registered buffer's descriptor
     * @return the advertisement of it
     */
    public static RpingInfo of(RemoteBuffer buffer) {
        if (buffer.length() > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("rping sizes are 32 bits: " + buffer.length());
        }
        return new RpingInfo(buffer.address(), buffer.rkey(), (int) buffer.length());
    }

    /** {@return the advertised buffer as a target for read/write} */
    public RemoteBuffer remote() {
        return new RemoteBuffer(address, Integer.toUnsignedLong(size), rkey);
    }

    /** {@return a fresh buffer with the 16 wire bytes, ready to send} */
    public ByteBuffer encode() {
        return ByteBuffer.allocate(BYTES).order(ByteOrder.BIG_ENDIAN).putLong(address).putInt(rkey).putInt(size)
                .flip();
    }

    /**
     * Decodes a received message.
     *
     * @param message the payload between position and limit
     * @return the info
     * @throws RpingException unless exactly {@link #BYTES} bytes arrived (rping's "Received bogus data")
     */
    public static RpingInfo decode(ByteBuffer message) {
        if (message.remaining() != BYTES) {
            throw new RpingException("received bogus data, size " + message.remaining() + " (rping messages are "
                    + BYTES + " bytes)");
        }
        ByteBuffer b = message.duplicate().order(ByteOrder.BIG_ENDIAN);
        return new RpingInfo(b.getLong(), b.getInt(), b.getInt());
    }
}
