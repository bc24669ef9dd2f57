package rdmaflux.cm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The little protocol rdmaflux peers speak in {@link ConnectionOptions.Protocol#CREDITS} mode.
 *
 * <p>Connect and accept private data start with a 12-byte header: magic {@code "RFX1"}, version,
 * flags, the receive credits granted, and the receive buffer size; the application's own private data
 * follows. Every SEND carries 32 bits of immediate data: bit 31 marks a control message (no payload,
 * not delivered), bit 30 an orderly close, bits 0-29 the credits returned with it.
 */
final class Wire {
    static final int MAGIC = 0x52465831; // "RFX1"
    static final int VERSION = 1;
    static final int HEADER = 12;
    /** The CM carries 56 bytes of private data in a connect request on RoCE/IB. */
    static final int MAX_CONNECT_PRIVATE_DATA = 56;
    static final int CONTROL = 1 << 31;
    static final int CLOSE = 1 << 30;
    static final int CREDITS = (1 << 30) - 1;

    private Wire() {
    }

    /** The peer's parameters from its private data. */
    record Hello(int credits, int bufferSize, byte[] applicationData) {
    }

    /**
     * Encodes a hello.
     *
     * @throws IllegalArgumentException when a value does not fit its field (credits 0..65535, at most 255
     *                                  bytes of application data, a positive buffer size): truncating it
     *                                  would tell the peer something else
     */
    static byte[] hello(int credits, int bufferSize, byte[] applicationData) {
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
    static Hello parse(byte[] privateData) {
        if (privateData == null || privateData.length < HEADER) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(privateData).order(ByteOrder.BIG_ENDIAN);
        if (b.getInt() != MAGIC || b.get() != VERSION) {
            return null;
        }
        int appLength = Byte.toUnsignedInt(b.get());
        int credits = Short.toUnsignedInt(b.getShort());
        int size = b.getInt();
        if (size <= 0 || HEADER + appLength > privateData.length) {
            return null;
        }
        return new Hello(credits, size, Arrays.copyOfRange(privateData, HEADER, HEADER + appLength));
    }
}
