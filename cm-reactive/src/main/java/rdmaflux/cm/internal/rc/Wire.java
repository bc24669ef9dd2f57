package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The little protocol rdmaflux peers speak in {@link ConnectionOptions.Protocol#CREDITS} mode.
 *
 * <p>Connect and accept private data start with a 12-byte header: magic {@code "RFX1"}, version, the
 * length of the application's private data, the receive credits granted, and the receive buffer size;
 * the application's own private data follows. Version 2 adds large messages; a version 1 peer is still
 * understood, without them.
 *
 * <p>Every SEND carries 32 bits of immediate data: bit 31 marks a control message (no payload, not
 * delivered), bit 30 an orderly close, bit 29 a large-message descriptor ({@link #LARGE}), bits 16-28
 * the number of the peer's large messages this side finished reading ({@link #FINISHED}), bits 0-15 the
 * credits returned with it. docs/protocol.md describes the whole exchange.
 */
public final class Wire {
    public static final int MAGIC = 0x52465831; // "RFX1"
    /** The newest hello version this side speaks; it understands every one from 1 on. */
    public static final int VERSION = 2;
    /** The first version with large messages. */
    static final int LARGE_MESSAGES = 2;
    public static final int HEADER = 12;
    /** The CM carries 56 bytes of private data in a connect request on RoCE/IB. */
    public static final int MAX_CONNECT_PRIVATE_DATA = 56;
    public static final int CONTROL = 1 << 31;
    static final int CLOSE = 1 << 30;
    /** A data SEND whose payload is a {@link #DESCRIPTOR}-byte large-message descriptor. */
    public static final int LARGE = 1 << 29;
    public static final int FINISHED_SHIFT = 16;
    /** Mask of the count of large messages finished (after shifting by {@link #FINISHED_SHIFT}). */
    static final int FINISHED = (1 << 13) - 1;
    static final int CREDITS = 0xFFFF;
    /** A large-message descriptor: the source's address (8 bytes), rkey (4) and length (4), big-endian. */
    public static final int DESCRIPTOR = 16;

    private Wire() {
    }

    /** The peer's parameters from its private data. */
    public record Hello(int version, int credits, int bufferSize, byte[] applicationData) {
        /** {@return whether the peer speaks the large-message rendezvous} */
        public boolean largeMessages() {
            return version >= LARGE_MESSAGES;
        }
    }

    /**
     * Encodes a hello.
     *
     * @throws IllegalArgumentException when a value does not fit its field (credits 0..65535, at most 255
     *                                  bytes of application data, a positive buffer size): truncating it
     *                                  would tell the peer something else
     */
    public static byte[] hello(int credits, int bufferSize, byte[] applicationData) {
        if (credits < 0 || credits > 0xFFFF || bufferSize <= 0 || applicationData.length > 0xFF) {
            throw new IllegalArgumentException("hello fields out of range: credits " + credits + " (0..65535), buffer "
                    + "size " + bufferSize + " (> 0), " + applicationData.length + " bytes of application data (<= 255)");
        }
        ByteBuffer b = ByteBuffer.allocate(HEADER + applicationData.length).order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) applicationData.length).putShort((short) credits).putInt(bufferSize)
                .put(applicationData);
        return b.array();
    }

    /**
     * Parses a peer's private data. Never throws, whatever the bytes: the data comes from the network.
     *
     * @param privateData the private data of a connect request or reply (null counts as none)
     * @return the peer's hello, or {@code null} when the private data is not a valid hello: not ours
     *         (e.g. rping), truncated, or with a buffer size that is not positive
     */
    public static Hello parse(byte[] privateData) {
        if (privateData == null || privateData.length < HEADER) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(privateData).order(ByteOrder.BIG_ENDIAN);
        if (b.getInt() != MAGIC) {
            return null;
        }
        int version = Byte.toUnsignedInt(b.get());
        if (version < 1 || version > VERSION) {
            return null;
        }
        int appLength = Byte.toUnsignedInt(b.get());
        int credits = Short.toUnsignedInt(b.getShort());
        int size = b.getInt();
        if (size <= 0 || HEADER + appLength > privateData.length) {
            return null;
        }
        return new Hello(version, credits, size, Arrays.copyOfRange(privateData, HEADER, HEADER + appLength));
    }

    /**
     * The version a peer's private data claims, whether or not the rest is a valid hello: what tells a peer
     * that is not rdmaflux from an rdmaflux peer of another version. Never throws.
     *
     * @param privateData the private data of a connect request or reply (null counts as none)
     * @return the version byte, or -1 when the data does not start with the magic
     */
    public static int claimedVersion(byte[] privateData) {
        if (privateData == null || privateData.length < 5) {
            return -1;
        }
        ByteBuffer b = ByteBuffer.wrap(privateData).order(ByteOrder.BIG_ENDIAN);
        return b.getInt() == MAGIC ? Byte.toUnsignedInt(b.get()) : -1;
    }
}
