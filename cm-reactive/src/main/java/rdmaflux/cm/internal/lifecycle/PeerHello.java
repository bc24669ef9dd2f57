package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.ServerOptions;
import rdmaflux.cm.Step;
import rdmaflux.cm.internal.rc.Wire;

import java.nio.charset.StandardCharsets;

/**
 * The hello exchange of the connection handshake (docs/protocol.md): the private data this side sends, and
 * what the peer's says. With the credits protocol both are rdmaflux hellos ({@link Wire#hello}); with
 * {@link ConnectionOptions.Protocol#RAW} they are the application's bytes, and the peer is taken to use this
 * side's buffer size.
 *
 * @param applicationData the application's part of the peer's private data
 * @param bufferSize the peer's receive buffer size: the largest eager message it takes
 * @param credits the credits the peer grants at the start (0 with RAW)
 * @param largeMessages whether the peer speaks large messages
 */
record PeerHello(byte[] applicationData, int bufferSize, int credits, boolean largeMessages) {
    /** Before the peer's hello arrived. */
    static final PeerHello NONE = new PeerHello(new byte[0], 0, 0, false);

    /**
     * What the peer's private data says.
     *
     * @param hello the private data parsed as a hello, or {@code null} when it is none (or RAW)
     * @param raw the private data as it came
     * @param step the step it arrived in, for the failure
     * @throws RdmaCmException.ProtocolViolation when the credits protocol is spoken and it is not a hello
     */
    static PeerHello of(ConnectionOptions options, Wire.Hello hello, byte[] raw, Step step) {
        if (options.protocol() != ConnectionOptions.Protocol.CREDITS) {
            return new PeerHello(raw, options.bufferSize(), 0, false);
        }
        if (hello == null) {
            throw notAHello(step, raw);
        }
        return new PeerHello(hello.applicationData(), hello.bufferSize(), hello.credits(), hello.largeMessages());
    }

    /** {@return the private data this side sends with its connect or accept} */
    static byte[] ours(ConnectionOptions options) {
        return options.protocol() == ConnectionOptions.Protocol.CREDITS
                ? Wire.hello(options.receiveBuffers(), options.bufferSize(), options.privateData())
                : options.privateData();
    }

    /** What private data that is not a valid hello is, which decides what the peer must be told to do. */
    enum Mismatch {
        /** No RFX1 magic: a plain verbs application, or an rdmaflux peer with {@code Protocol.RAW}. */
        NOT_RDMAFLUX,
        /** The magic with a version this side does not speak: an rdmaflux of another hello version. */
        UNKNOWN_VERSION,
        /** The magic and a known version, with fields out of range: a peer that breaks the protocol. */
        MALFORMED;

        static Mismatch of(byte[] raw) {
            int version = Wire.claimedVersion(raw);
            if (version < 0) {
                return NOT_RDMAFLUX;
            }
            return version < 1 || version > Wire.VERSION ? UNKNOWN_VERSION : MALFORMED;
        }
    }

    /**
     * The typed failure for private data that is not a valid hello, saying which mismatch it is and what to
     * do about it.
     *
     * @param step the step the hello arrived in: {@link Step#CONNECT} on a client, {@link Step#ACCEPT} on a server
     * @param raw the peer's private data
     * @return the failure
     */
    static RdmaCmException.ProtocolViolation notAHello(Step step, byte[] raw) {
        boolean client = step == Step.CONNECT;
        String message = switch (Mismatch.of(raw)) {
            case NOT_RDMAFLUX -> client
                    ? "the server's accept carries no rdmaflux hello (RFX1): it is a plain verbs application (such "
                            + "as rping) or an rdmaflux server with Protocol.RAW; use ConnectionOptions.Protocol.RAW "
                            + "to talk to it"
                    : "the connect request carries no rdmaflux hello (RFX1): the client is a plain verbs application "
                            + "or uses Protocol.RAW; it must connect with ConnectionOptions.Protocol.CREDITS, or this "
                            + "server must use ConnectionOptions.Protocol.RAW";
            case UNKNOWN_VERSION -> "it speaks rdmaflux hello version " + Wire.claimedVersion(raw) + ", this side "
                    + "versions 1 to " + Wire.VERSION + ": use rdmaflux releases that share a hello version";
            case MALFORMED -> "its rdmaflux hello is malformed (a length past the data, or a buffer size of 0 or "
                    + "less): the peer breaks the protocol";
        };
        return new RdmaCmException.ProtocolViolation(step, message);
    }

    /**
     * The private data a server rejects a request with when it carried no valid hello: the client's
     * {@link RdmaCmException.Rejected#isProtocolMismatch()} marker, then what the client must do, in ASCII
     * within the 148 bytes the CM carries (a C client can print it too).
     *
     * @param raw the request's private data
     * @return the rejection's private data
     */
    static byte[] refusal(byte[] raw) {
        String why = switch (Mismatch.of(raw)) {
            case NOT_RDMAFLUX -> "no rdmaflux hello: connect with ConnectionOptions.Protocol.CREDITS (the default)";
            case UNKNOWN_VERSION -> "hello version " + Wire.claimedVersion(raw) + " unknown, this server speaks 1 to "
                    + Wire.VERSION + ": use rdmaflux releases that share a hello version";
            case MALFORMED -> "malformed hello (a length past the data, or a buffer size of 0 or less)";
        };
        return (ServerOptions.HELLO_REFUSED + " " + why).getBytes(StandardCharsets.US_ASCII);
    }
}
