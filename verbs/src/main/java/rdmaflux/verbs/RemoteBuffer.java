package rdmaflux.verbs;

/**
 * What a peer needs to RDMA-read, -write or run atomics on a registered region: send it over the
 * connection (or any out-of-band channel) and use it as the target of one-sided operations.
 *
 * @param address the remote virtual address
 * @param length the number of bytes the peer may touch from {@code address}, never negative
 * @param rkey the region's remote key
 */
public record RemoteBuffer(long address, long length, int rkey) {
    /**
     * Checks the length.
     *
     * @throws IllegalArgumentException when {@code length} is negative (e.g. decoded from a corrupt or
     *                                  hostile descriptor)
     */
    public RemoteBuffer {
        if (length < 0) {
            throw new IllegalArgumentException("negative remote buffer length " + length);
        }
    }

    /** Bytes {@link #writeTo} uses: address, length, rkey in big-endian order. */
    public static final int ENCODED_SIZE = 20;

    /**
     * A sub-range of this buffer.
     *
     * @param offset bytes from the start
     * @param length bytes
     * @return the slice
     * @throws IndexOutOfBoundsException when the range is not inside this buffer (the check cannot overflow)
     */
    public RemoteBuffer slice(long offset, long length) {
        // offset > this.length - length, not offset + length > this.length: the sum overflows near MAX_VALUE.
        if (offset < 0 || length < 0 || offset > this.length - length) {
            throw new IndexOutOfBoundsException("slice of " + length + " bytes at offset " + offset + " of a "
                    + this.length + "-byte buffer");
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
     * @throws IllegalArgumentException when the encoded length is negative
     * @throws java.nio.BufferUnderflowException when fewer than {@link #ENCODED_SIZE} bytes remain
     */
    public static RemoteBuffer readFrom(java.nio.ByteBuffer buf) {
        buf.order(java.nio.ByteOrder.BIG_ENDIAN);
        return new RemoteBuffer(buf.getLong(), buf.getLong(), buf.getInt());
    }
}
