package rdmaflux.verbs;

/**
 * What a peer needs to RDMA-read, -write or run atomics on a registered region: send it over the
 * connection (or any out-of-band channel) and use it as the target of one-sided operations.
 *
 * @param address the remote virtual address
 * @param length the number of bytes the peer may touch from {@code address}
 * @param rkey the region's remote key
 */
public record RemoteBuffer(long address, long length, int rkey) {
    /** Bytes {@link #writeTo} uses: address, length, rkey in big-endian order. */
    public static final int ENCODED_SIZE = 20;

    /**
     * A sub-range of this buffer.
     *
     * @param offset bytes from the start
     * @param length bytes
     * @return the slice
     */
    public RemoteBuffer slice(long offset, long length) {
        if (offset < 0 || length < 0 || offset + length > this.length) {
            throw new IndexOutOfBoundsException("slice [" + offset + ", " + (offset + length) + ") of " + this.length);
        }
        return new RemoteBuffer(address + offset, length, rkey);
    }

    /**
     * Encodes this descriptor for the wire.
     *
     * @param buf receives {@link #ENCODED_SIZE} bytes at its position
     */
    public void writeTo(java.nio.ByteBuffer buf) {
        buf.order(java.nio.ByteOrder.BIG_ENDIAN).putLong(address).putLong(length).putInt(rkey);
    }

    /**
     * Decodes a descriptor written by {@link #writeTo}.
     *
     * @param buf holds {@link #ENCODED_SIZE} bytes at its position
     * @return the descriptor
     */
    public static RemoteBuffer readFrom(java.nio.ByteBuffer buf) {
        buf.order(java.nio.ByteOrder.BIG_ENDIAN);
        return new RemoteBuffer(buf.getLong(), buf.getLong(), buf.getInt());
    }
}
