package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;
import rdmaflux.cm.internal.rc.Wire;

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
            throw notAHello(step);
        }
        return new PeerHello(hello.applicationData(), hello.bufferSize(), hello.credits(), hello.largeMessages());
    }

    /** {@return the private data this side sends with its connect or accept} */
    static byte[] ours(ConnectionOptions options) {
        return options.protocol() == ConnectionOptions.Protocol.CREDITS
                ? Wire.hello(options.receiveBuffers(), options.bufferSize(), options.privateData())
                : options.privateData();
    }

    /**
     * The typed failure for private data that is not a valid hello: a peer that is not rdmaflux, or one
     * that breaks the protocol (wrong magic or version, a length past the data, a buffer size of 0 or
     * less).
     *
     * @param step the step the hello arrived in
     * @return the failure
     */
    static RdmaCmException.ProtocolViolation notAHello(Step step) {
        return new RdmaCmException.ProtocolViolation(step, "its private data is not a valid rdmaflux hello (RFX1 "
                + "magic, version 1 or 2, lengths within the data, a positive buffer size): use "
                + "ConnectionOptions.Protocol.RAW to talk to plain verbs applications");
    }
}
