package rdmaflux.cm;

import rdmaflux.cm.internal.lifecycle.Server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.RdmaException;
import rdmaflux.verbs.WcStatus;

class RdmaCmExceptionTest {

    private static final int ETIMEDOUT = -110;

    static Stream<Arguments> errorEvents() {
        return Stream.of(
                Arguments.of(CmEventType.ADDR_ERROR, RdmaCmException.AddressError.class),
                Arguments.of(CmEventType.ROUTE_ERROR, RdmaCmException.RouteError.class),
                Arguments.of(CmEventType.CONNECT_ERROR, RdmaCmException.ConnectError.class),
                Arguments.of(CmEventType.UNREACHABLE, RdmaCmException.Unreachable.class),
                Arguments.of(CmEventType.REJECTED, RdmaCmException.Rejected.class),
                Arguments.of(CmEventType.DEVICE_REMOVAL, RdmaCmException.DeviceRemoved.class),
                Arguments.of(CmEventType.DISCONNECTED, RdmaCmException.Disconnected.class),
                Arguments.of(CmEventType.TIMEWAIT_EXIT, RdmaCmException.TimewaitExit.class));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("errorEvents")
    void eachErrorEventMapsToItsSubclass(CmEventType type, Class<? extends RdmaCmException> expected) {
        for (Step step : Step.values()) {
            RdmaCmException e = RdmaCmException.of(step, type, ETIMEDOUT, null);
            assertEquals(expected, e.getClass());
            assertEquals(step, e.step());
            assertEquals(type, e.event());
            assertEquals("rdma_cm " + step.name().toLowerCase(java.util.Locale.ROOT), e.operation());
            assertTrue(e.getMessage().startsWith(e.operation() + ": "), e.getMessage());
        }
    }

    @Test
    void transientConnectFailuresAreRetryableAndDecisionsAreNot() {
        for (CmEventType t : List.of(CmEventType.ADDR_ERROR, CmEventType.ROUTE_ERROR, CmEventType.CONNECT_ERROR,
                CmEventType.UNREACHABLE)) {
            assertTrue(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, t, ETIMEDOUT, null)), t.name());
        }
        assertTrue(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.INVALID_SERVICE_ID, null)), "nobody listens yet");
        assertTrue(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.TIMEOUT, null)));
        assertFalse(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, new byte[] {1})), "the server's application said no");
        assertTrue(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, java.util.Arrays.copyOf(Server.QUEUE_FULL, 148))),
                "the server's accept queue was full: it may have room later");
        for (CmEventType t : List.of(CmEventType.DISCONNECTED, CmEventType.TIMEWAIT_EXIT)) {
            assertFalse(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, t, 0, null)), t.name());
        }
        assertTrue(RdmaRetry.isRetryable(RdmaCmException.of(Step.CONNECT, CmEventType.DEVICE_REMOVAL, 0, null)),
                "the device may come back, or another serve the address");
        assertTrue(RdmaRetry.isRetryable(new rdmaflux.verbs.RdmaNoDeviceException("rdma_resolve_addr", 19, null)),
                "no device serves the address yet");
        assertFalse(RdmaRetry.isRetryable(new rdmaflux.verbs.RdmaException("ibv_reg_mr", 12, null)),
                "another native failure");
        for (Step step : Step.values()) {
            boolean connecting = step != Step.DISCONNECT && step != Step.TRANSFER;
            assertEquals(connecting, new RdmaCmException.StepTimeout(step, java.time.Duration.ofSeconds(1))
                    .isRetryable(), step.name());
        }
        assertFalse(RdmaRetry.isRetryable(new RdmaCmException.CompletionError(WcStatus.RETRY_EXC_ERR, "lost")));
        assertFalse(RdmaRetry.isRetryable(new IllegalArgumentException("bad options")));
    }

    @ParameterizedTest
    @EnumSource(value = CmEventType.class,
            names = {"ADDR_ERROR", "ROUTE_ERROR", "CONNECT_ERROR", "UNREACHABLE", "DEVICE_REMOVAL"})
    void statusIsKeptForErrnoCarryingEvents(CmEventType type) {
        assertEquals(ETIMEDOUT, RdmaCmException.of(Step.CONNECT, type, ETIMEDOUT, null).status());
    }

    @ParameterizedTest
    @EnumSource(value = CmEventType.class,
            names = {"ADDR_ERROR", "ROUTE_ERROR", "CONNECT_ERROR", "UNREACHABLE", "MULTICAST_ERROR"})
    void messageNamesTheErrnoOfANegativeStatus(CmEventType type) {
        RdmaCmException e = RdmaCmException.of(Step.ADDRESS, type, ETIMEDOUT, null);
        assertTrue(e.getMessage().contains("ETIMEDOUT"), e.getMessage());
        assertTrue(e.getMessage().contains("-110"), e.getMessage());
    }

    @Test
    void positiveStatusIsNotMistakenForAnErrno() {
        // 110 as a positive value is not an errno; naming it ETIMEDOUT would mislead.
        RdmaCmException e = RdmaCmException.of(Step.CONNECT, CmEventType.CONNECT_ERROR, 110, null);
        assertFalse(e.getMessage().contains("ETIMEDOUT"), e.getMessage());
        assertTrue(e.getMessage().contains("status 110"), e.getMessage());
    }

    @Test
    void addressErrorHintsAtTheUsualCause() {
        RdmaCmException e = RdmaCmException.of(Step.ADDRESS, CmEventType.ADDR_ERROR, -19, null);
        assertTrue(e.getMessage().contains("ENODEV"), e.getMessage());
        assertTrue(e.getMessage().contains("RDMA device"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(value = CmEventType.class, names = {"ADDR_RESOLVED", "ROUTE_RESOLVED", "CONNECT_REQUEST",
            "CONNECT_RESPONSE", "ESTABLISHED", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE"})
    void otherEventsGetTheBaseTypeSayingUnexpected(CmEventType type) {
        RdmaCmException e = RdmaCmException.of(Step.TRANSFER, type, -5, null);
        assertEquals(RdmaCmException.class, e.getClass());
        assertEquals(type, e.event());
        assertEquals(-5, e.status());
        assertTrue(e.getMessage().contains("unexpected " + type), e.getMessage());
        assertTrue(e.getMessage().contains("EIO"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(CmEventType.class)
    void everyExceptionIsAnRdmaExceptionWithoutErrno(CmEventType type) {
        // The status lives in status(); errno() is reserved for failed system calls.
        RdmaException e = assertInstanceOf(RdmaException.class, RdmaCmException.of(Step.ROUTE, type, -110, null));
        assertEquals(0, e.errno());
    }

    @Test
    void rejectedExposesReasonAndPrivateData() {
        byte[] data = {10, 20, 30};
        RdmaCmException.Rejected r = assertInstanceOf(RdmaCmException.Rejected.class,
                RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED, RdmaCmException.Rejected.CONSUMER_REJECT, data));
        assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, r.reason());
        assertEquals(RdmaCmException.Rejected.CONSUMER_REJECT, r.status());
        assertTrue(r.getMessage().contains("rejected by the server"), r.getMessage());
        assertArrayEquals(new byte[] {10, 20, 30}, r.privateData());
    }

    @Test
    void aFullAcceptQueueIsRecognisedByItsPrivateDataAndReason() {
        // The CM pads reject data to 148 bytes: the marker is a prefix.
        byte[] padded = java.util.Arrays.copyOf("RFX1FULL".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 148);
        RdmaCmException.Rejected full = (RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT,
                CmEventType.REJECTED, RdmaCmException.Rejected.CONSUMER_REJECT, padded);
        assertTrue(full.isAcceptQueueFull());
        assertTrue(full.getMessage().contains("accept queue is full"), full.getMessage());
        // The same bytes with another reason, a shorter prefix, or other data are not that.
        assertFalse(((RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.INVALID_SERVICE_ID, padded)).isAcceptQueueFull());
        assertFalse(((RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, java.util.Arrays.copyOf(padded, 7))).isAcceptQueueFull());
        assertFalse(((RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, new byte[148])).isAcceptQueueFull());
        assertFalse(((RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, null)).isAcceptQueueFull());
    }

    @Test
    void aRefusedHelloIsAProtocolMismatchQuotingTheServersPrintableText() {
        byte[] sent = "RFX1HELO no rdmaflux hello: connect with ConnectionOptions.Protocol.CREDITS\u0007"
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] padded = java.util.Arrays.copyOf(sent, 148);
        RdmaCmException.Rejected r = (RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT,
                CmEventType.REJECTED, RdmaCmException.Rejected.CONSUMER_REJECT, padded);
        assertTrue(r.isProtocolMismatch());
        assertFalse(r.isAcceptQueueFull());
        assertFalse(r.isRetryable(), "the same connect would be refused again");
        // Quoted up to the CM's zero padding, with the control character the peer sent made harmless.
        assertTrue(r.getMessage().endsWith("refused this request's private data as a hello: no rdmaflux hello: "
                + "connect with ConnectionOptions.Protocol.CREDITS?)"), r.getMessage());
        // Another reason, or a queue-full rejection, is not that.
        assertFalse(((RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.INVALID_SERVICE_ID, padded)).isProtocolMismatch());
        assertFalse(((RdmaCmException.Rejected) RdmaCmException.of(Step.CONNECT, CmEventType.REJECTED,
                RdmaCmException.Rejected.CONSUMER_REJECT, "RFX1FULL".getBytes(java.nio.charset.StandardCharsets
                        .US_ASCII))).isProtocolMismatch());
    }

    @Test
    void rejectedWithoutListenerSaysSo() {
        RdmaCmException.Rejected r = assertInstanceOf(RdmaCmException.Rejected.class, RdmaCmException.of(
                Step.CONNECT, CmEventType.REJECTED, RdmaCmException.Rejected.INVALID_SERVICE_ID, null));
        assertTrue(r.getMessage().contains("no listener"), r.getMessage());
        assertEquals(0, r.privateData().length);
    }

    @Test
    void rejectedPrivateDataIsCopiedOnTheWayInAndOut() {
        byte[] data = {1, 2};
        RdmaCmException.Rejected r = (RdmaCmException.Rejected) RdmaCmException.of(
                Step.ACCEPT, CmEventType.REJECTED, 5, data);
        data[0] = 9;
        r.privateData()[1] = 9;
        assertArrayEquals(new byte[] {1, 2}, r.privateData());
        assertTrue(r.getMessage().contains("reason 5)"), r.getMessage());
    }

    @Test
    void stepTimeoutNamesStepAndDurationAndHasNoEvent() {
        RdmaCmException.StepTimeout t = new RdmaCmException.StepTimeout(Step.ROUTE, Duration.ofMillis(1500));
        assertEquals(Step.ROUTE, t.step());
        assertNull(t.event());
        assertEquals(0, t.status());
        assertTrue(t.getMessage().contains("ROUTE"), t.getMessage());
        assertTrue(t.getMessage().contains("PT1.5S"), t.getMessage());
    }

    @Test
    void illegalEventNamesEventAndStateAndDefaultsToTransfer() {
        RdmaCmException.IllegalEvent e = new RdmaCmException.IllegalEvent(null, CmEventType.CONNECT_REQUEST,
                ConnectionState.IDLE);
        assertEquals(Step.TRANSFER, e.step());
        assertEquals(CmEventType.CONNECT_REQUEST, e.event());
        assertTrue(e.getMessage().contains("CONNECT_REQUEST"), e.getMessage());
        assertTrue(e.getMessage().contains("Idle"), e.getMessage());
    }

    @Test
    void completionErrorKeepsTheWorkCompletionStatus() {
        RdmaCmException.CompletionError e = new RdmaCmException.CompletionError(WcStatus.RETRY_EXC_ERR, "send failed");
        assertEquals(WcStatus.RETRY_EXC_ERR, e.wcStatus());
        assertEquals(WcStatus.RETRY_EXC_ERR.value(), e.status());
        assertEquals(Step.TRANSFER, e.step());
        assertNull(e.event());
    }
}
