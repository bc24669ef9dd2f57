package rdmaflux.cm.internal.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;

import org.junit.jupiter.api.Test;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;
import rdmaflux.cm.internal.rc.Wire;
import rdmaflux.verbs.CmEventType;

/** Each mismatch says what it is and what to do, on both sides of the handshake. */
class PeerHelloTest {
    /** What the CM hands over: private data padded with zeros (56 bytes in a request, 196 in a reply). */
    private static byte[] padded(byte[] data, int length) {
        return Arrays.copyOf(data, length);
    }

    private static byte[] hello(int version, int bufferSize) {
        byte[] h = Wire.hello(8, 4096, new byte[0]);
        h[4] = (byte) version;
        ByteBuffer.wrap(h).putInt(8, bufferSize);
        return h;
    }

    private static String clientFailure(byte[] accept) {
        RdmaCmException.ProtocolViolation v = assertThrows(RdmaCmException.ProtocolViolation.class,
                () -> PeerHello.of(ConnectionOptions.defaults(), Wire.parse(accept), accept, Step.CONNECT));
        assertEquals(Step.CONNECT, v.step());
        return v.getMessage();
    }

    @Test
    void aCreditsClientMeetingAPlainVerbsServerIsToldToUseRaw() {
        String m = clientFailure(new byte[196]); // rping's accept: no private data at all
        assertTrue(m.contains("no rdmaflux hello") && m.contains("use ConnectionOptions.Protocol.RAW"), m);
    }

    @Test
    void anUnknownVersionNamesBothVersionsAndDoesNotSuggestRaw() {
        String m = clientFailure(padded(hello(9, 4096), 196));
        assertTrue(m.contains("hello version 9") && m.contains("versions 1 to " + Wire.VERSION), m);
        assertFalse(m.contains("Protocol.RAW"), "an rdmaflux peer of another version is not a plain verbs one: " + m);
    }

    @Test
    void aMalformedHelloOfAKnownVersionIsABrokenProtocol() {
        String m = clientFailure(padded(hello(2, 0), 196));
        assertTrue(m.contains("malformed") && m.contains("breaks the protocol"), m);
    }

    @Test
    void aServerTellsARawClientToUseCreditsInItsRejection() {
        byte[] request = new byte[Wire.MAX_CONNECT_PRIVATE_DATA];
        String server = PeerHello.notAHello(Step.ACCEPT, request).getMessage();
        assertTrue(server.contains("must connect with ConnectionOptions.Protocol.CREDITS"), server);
        byte[] refusal = PeerHello.refusal(request);
        RdmaCmException.Rejected seen = rejectedWith(refusal);
        assertTrue(seen.isProtocolMismatch());
        assertTrue(seen.getMessage().contains("connect with ConnectionOptions.Protocol.CREDITS"), seen.getMessage());
    }

    @Test
    void everyRefusalFitsTheRejectionAndIsQuotedWhole() {
        for (byte[] request : new byte[][] {new byte[56], padded(hello(255, 4096), 56), padded(hello(1, -1), 56)}) {
            byte[] refusal = PeerHello.refusal(request);
            assertTrue(refusal.length <= 148, "the CM carries 148 bytes in a rejection: " + refusal.length);
            String text = new String(refusal, java.nio.charset.StandardCharsets.US_ASCII).substring(8).strip();
            RdmaCmException.Rejected seen = rejectedWith(refusal);
            assertTrue(seen.getMessage().endsWith(text + ")"), seen.getMessage());
        }
        assertTrue(rejectedWith(PeerHello.refusal(padded(hello(255, 4096), 56))).getMessage()
                .contains("hello version 255 unknown"));
    }

    private static RdmaCmException.Rejected rejectedWith(byte[] refusal) {
        return (RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, padded(refusal, 148));
    }
}
