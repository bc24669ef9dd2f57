package rdmaflux.cm;

import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.internal.loop.SignalScheduler;
import rdmaflux.cm.internal.rc.Wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.scheduler.Schedulers;
import rdmaflux.cm.ConnectionOptions.Builder;
import rdmaflux.cm.ConnectionOptions.CompletionMode;
import rdmaflux.cm.ConnectionOptions.Protocol;

class ConnectionOptionsTest {

    @Test
    void thePrivateDataLimitsAreTheWireFormats() {
        // The options check private data against the wire format's sizes without depending on the RC package.
        assertEquals(Wire.MAX_CONNECT_PRIVATE_DATA, QueuePairOptions.MAX_CONNECT_PRIVATE_DATA);
        assertEquals(Wire.HEADER, ConnectionOptions.CREDITS_HEADER);
    }

    @Test
    void defaultsAreTheDocumentedOnes() {
        ConnectionOptions o = ConnectionOptions.defaults();
        assertEquals(32, o.receiveBuffers());
        assertEquals(32, o.sendBuffers());
        assertEquals(8192, o.bufferSize());
        assertEquals(128, o.sendQueueDepth());
        assertEquals(64, o.maxInlineData());
        assertEquals(Duration.ofSeconds(2), o.timeout(Step.ADDRESS));
        assertEquals(Duration.ofSeconds(2), o.timeout(Step.ROUTE));
        assertEquals(Duration.ofSeconds(10), o.timeout(Step.CONNECT));
        assertEquals(Duration.ofSeconds(10), o.timeout(Step.ACCEPT));
        assertEquals(Duration.ofSeconds(3), o.timeout(Step.DISCONNECT));
        assertNull(o.timeout(Step.TRANSFER), "an established connection must not time out");
        assertEquals(6, o.retryCount());
        assertEquals(7, o.rnrRetryCount());
        assertEquals(CompletionMode.EVENT_DRIVEN, o.completionMode());
        assertEquals(Protocol.CREDITS, o.protocol());
        assertSame(Loops.sharedScheduler(), o.scheduler());
        assertTrue(o.recycledMessages());
        assertSame(RdmaRecorder.NOOP, o.recorder());
        assertEquals(0, o.privateData().length);
        assertEquals(Duration.ofMillis(1), o.busyPoll());
        assertEquals(ConnectionOptions.DEVICE_MAXIMUM, o.initiatorDepth());
        assertEquals(ConnectionOptions.DEVICE_MAXIMUM, o.responderResources());
        assertEquals(17, o.ackTimeout());
        assertEquals(ConnectionOptions.DEVICE_DEFAULT, o.typeOfService());
        assertEquals(Integer.MAX_VALUE, o.maxInboundMessageSize());
        assertTrue(o.sharedCompletionQueue());
    }

    @Test
    void theBuilderStartsFromTheDefaults() {
        assertEquals(ConnectionOptions.defaults().toString(), ConnectionOptions.builder().build().toString());
        assertEquals(ConnectionOptions.defaults().toString(), ConnectionOptions.defaults().toBuilder().build().toString());
    }

    @Test
    void sharedCompletionQueueIsKeptByCopiesAndBuilders() {
        ConnectionOptions shared = ConnectionOptions.builder().sharedCompletionQueue(true).build();
        assertTrue(shared.sharedCompletionQueue());
        assertTrue(ConnectionOptions.defaults().sharedCompletionQueue(), "shared by default");
        assertTrue(shared.toBuilder().privateData(new byte[] {1}).build().sharedCompletionQueue());
        assertTrue(shared.toBuilder().receiveBuffers(4).build().sharedCompletionQueue());
        assertFalse(shared.toBuilder().sharedCompletionQueue(false).build().sharedCompletionQueue());
        // Busy polling keeps its own CQ whatever this says (CqBinding): the option is kept, not refused.
        assertTrue(shared.toBuilder().busyPoll(Duration.ofMillis(2)).build().sharedCompletionQueue());
    }

    @Test
    void theInboundLimitIsPositiveAndKeptByToBuilder() {
        ConnectionOptions o = ConnectionOptions.defaults().toBuilder().maxInboundMessageSize(1 << 20).build();
        assertEquals(1 << 20, o.toBuilder().build().maxInboundMessageSize());
        assertThrows(IllegalArgumentException.class,
                () -> ConnectionOptions.defaults().toBuilder().maxInboundMessageSize(0));
    }

    /**
     * Asking for the default scheduler starts signal threads without rdma-core (this JVM has no RDMA device);
     * the shared loops adopt them when they are made.
     */
    @Test
    void theDefaultSchedulerIsTheSharedSignalThreadsAndNeedsNoLoops() {
        ConnectionOptions o = ConnectionOptions.defaults();
        SignalScheduler s = assertInstanceOf(SignalScheduler.class, o.scheduler());
        assertSame(s, o.scheduler());
        assertFalse(s.isDisposed());
        for (Thread t : s.threads()) {
            assertTrue(t.getName().startsWith("rdmaflux-signal-"), t.getName());
        }
        assertThrows(NullPointerException.class, () -> ConnectionOptions.defaults().toBuilder().scheduler(null));
        assertSame(Schedulers.immediate(), o.toBuilder().scheduler(Schedulers.immediate()).build().scheduler());
    }

    @Test
    void defaultsAreShared() {
        assertSame(ConnectionOptions.defaults(), ConnectionOptions.defaults());
    }

    @Test
    void aTimeoutSetOnACopyLeavesTheOriginal() {
        ConnectionOptions o = ConnectionOptions.defaults();
        ConnectionOptions p = o.toBuilder().timeout(Step.CONNECT, Duration.ofMillis(250)).build();
        assertNotSame(o, p);
        assertEquals(Duration.ofMillis(250), p.timeout(Step.CONNECT));
        assertEquals(Duration.ofSeconds(10), o.timeout(Step.CONNECT));
        // Only the one step changes.
        assertEquals(Duration.ofSeconds(2), p.timeout(Step.ADDRESS));
        assertEquals(o.receiveBuffers(), p.receiveBuffers());
    }

    @Test
    void aProtocolOrPrivateDataSetOnACopyLeavesTheOriginal() {
        ConnectionOptions o = ConnectionOptions.defaults();
        ConnectionOptions raw = o.toBuilder().protocol(Protocol.RAW).build();
        ConnectionOptions data = o.toBuilder().privateData(new byte[] {7}).build();
        assertEquals(Protocol.RAW, raw.protocol());
        assertArrayEquals(new byte[] {7}, data.privateData());
        assertEquals(Protocol.CREDITS, o.protocol());
        assertEquals(0, o.privateData().length);
        assertEquals(Protocol.CREDITS, data.protocol());
    }

    @Test
    void toBuilderCopiesEverythingAndBuildingDoesNotTouchTheOriginal() {
        RdmaRecorder recorder = new RdmaRecorder() {
        };
        ConnectionOptions o = ConnectionOptions.defaults().toBuilder()
                .receiveBuffers(4).sendBuffers(5).bufferSize(1024).sendQueueDepth(16).maxInlineData(0)
                .retryCount(3).rnrRetryCount(1).privateData(new byte[] {1, 2}).protocol(Protocol.RAW)
                .busyPoll(Duration.ofMillis(5)).scheduler(Schedulers.immediate()).recorder(recorder)
                .timeout(Step.ROUTE, Duration.ofMillis(700))
                .initiatorDepth(3).responderResources(5).ackTimeout(14).typeOfService(0x20)
                .recycledMessages(false)
                .build();
        ConnectionOptions copy = o.toBuilder().build();
        Builder b = o.toBuilder();
        b.receiveBuffers(99);
        b.build();
        for (ConnectionOptions c : new ConnectionOptions[] {o, copy}) {
            assertEquals(4, c.receiveBuffers());
            assertEquals(5, c.sendBuffers());
            assertEquals(1024, c.bufferSize());
            assertEquals(16, c.sendQueueDepth());
            assertEquals(0, c.maxInlineData());
            assertEquals(3, c.retryCount());
            assertEquals(1, c.rnrRetryCount());
            assertArrayEquals(new byte[] {1, 2}, c.privateData());
            assertEquals(Protocol.RAW, c.protocol());
            assertEquals(CompletionMode.BUSY_POLL, c.completionMode());
            assertEquals(Duration.ofMillis(5), c.busyPoll());
            assertSame(Schedulers.immediate(), c.scheduler());
            assertSame(recorder, c.recorder());
            assertEquals(Duration.ofMillis(700), c.timeout(Step.ROUTE));
            assertEquals(Duration.ofSeconds(2), c.timeout(Step.ADDRESS));
            assertEquals(3, c.initiatorDepth());
            assertEquals(5, c.responderResources());
            assertEquals(14, c.ackTimeout());
            assertEquals(0x20, c.typeOfService());
            assertFalse(c.recycledMessages());
        }
        assertTrue(ConnectionOptions.defaults().recycledMessages());
    }

    @Test
    void busyPollSwitchesTheCompletionMode() {
        ConnectionOptions o = ConnectionOptions.defaults().toBuilder().busyPoll(Duration.ofMillis(2)).build();
        assertEquals(CompletionMode.BUSY_POLL, o.completionMode());
        ConnectionOptions back = o.toBuilder().completionMode(CompletionMode.EVENT_DRIVEN).build();
        assertEquals(CompletionMode.EVENT_DRIVEN, back.completionMode());
    }

    @Test
    void timeoutsMapIsImmutable() {
        assertThrows(UnsupportedOperationException.class,
                () -> ConnectionOptions.defaults().timeouts().put(Step.TRANSFER, Duration.ofSeconds(1)));
    }

    static Stream<Arguments> invalidBuilders() {
        return Stream.of(
                invalid("zero receive buffers", b -> b.receiveBuffers(0)),
                invalid("negative receive buffers", b -> b.receiveBuffers(-1)),
                invalid("more receive buffers than 16-bit credits", b -> b.receiveBuffers(0x8000)),
                invalid("zero send buffers", b -> b.sendBuffers(0)),
                invalid("zero buffer size", b -> b.bufferSize(0)),
                invalid("zero send queue depth", b -> b.sendQueueDepth(0)),
                invalid("negative inline data", b -> b.maxInlineData(-1)),
                invalid("retry 8", b -> b.retryCount(8)),
                invalid("retry -1", b -> b.retryCount(-1)),
                invalid("rnr retry 8", b -> b.rnrRetryCount(8)),
                invalid("rnr retry -1", b -> b.rnrRetryCount(-1)),
                invalid("initiator depth 255 (rdma_cm's own maximum marker)", b -> b.initiatorDepth(255)),
                invalid("initiator depth -2", b -> b.initiatorDepth(-2)),
                invalid("responder resources 255", b -> b.responderResources(255)),
                invalid("responder resources -2", b -> b.responderResources(-2)),
                invalid("ack timeout 32", b -> b.ackTimeout(32)),
                invalid("ack timeout -2", b -> b.ackTimeout(-2)),
                invalid("type of service 256", b -> b.typeOfService(256)),
                invalid("type of service -2", b -> b.typeOfService(-2)),
                invalid("45 bytes private data with CREDITS", b -> b.privateData(new byte[45])),
                invalid("57 bytes private data with RAW", b -> b.protocol(Protocol.RAW).privateData(new byte[57])),
                invalid("56 bytes fit RAW but not CREDITS",
                        b -> b.protocol(Protocol.RAW).privateData(new byte[56]).protocol(Protocol.CREDITS)));
    }

    private static Arguments invalid(String name, UnaryOperator<Builder> change) {
        return Arguments.of(name, change);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidBuilders")
    void invalidValuesAreRejected(String name, UnaryOperator<Builder> change) {
        assertThrows(IllegalArgumentException.class, () -> change.apply(ConnectionOptions.builder()).build());
    }

    /** A value out of its own range fails in its setter, naming the option and what it allows. */
    @Test
    void settersRejectAtOnceAndSayWhatIsAllowed() {
        Builder b = ConnectionOptions.builder();
        assertMessage("receiveBuffers must be 1..32767, got 0", () -> b.receiveBuffers(0));
        assertMessage("sendBuffers must be at least 1, got -1", () -> b.sendBuffers(-1));
        assertMessage("retryCount must be 0..7, got 8", () -> b.retryCount(8));
        assertMessage("initiatorDepth must be 0..254 or DEVICE_MAXIMUM (-1), got 255", () -> b.initiatorDepth(255));
        assertMessage("ackTimeout must be 0..31 or DEVICE_DEFAULT (-1), got 32", () -> b.ackTimeout(32));
        assertMessage("keepalive must be zero (off) or positive, got PT-1S", () -> b.keepalive(Duration.ofSeconds(-1)));
        assertMessage("timeout(CONNECT) must be positive, got PT0S", () -> b.timeout(Step.CONNECT, Duration.ZERO));
        assertMessage("privateData must be at most 56 bytes (44 with the CREDITS protocol), got 57",
                () -> b.privateData(new byte[57]));
        // What depends on two options is checked when both are known.
        Builder tooMuch = ConnectionOptions.builder().privateData(new byte[45]);
        assertMessage("privateData must be at most 44 bytes with the CREDITS protocol, got 45", tooMuch::build);
        NullPointerException e = assertThrows(NullPointerException.class, () -> b.portDownPolicy(null));
        assertEquals("portDownPolicy must not be null", e.getMessage());
        // The builder is unchanged by the values it refused.
        assertEquals(ConnectionOptions.defaults().toString(), b.build().toString());
    }

    private static void assertMessage(String expected, org.junit.jupiter.api.function.Executable call) {
        assertEquals(expected, assertThrows(IllegalArgumentException.class, call).getMessage());
    }

    static Stream<Arguments> limitValues() {
        return Stream.of(
                invalid("one receive buffer", b -> b.receiveBuffers(1)),
                invalid("32767 receive buffers", b -> b.receiveBuffers(0x7FFF)),
                invalid("no inline data", b -> b.maxInlineData(0)),
                invalid("retry 0", b -> b.retryCount(0).rnrRetryCount(0)),
                invalid("no reads in flight", b -> b.initiatorDepth(0).responderResources(0)),
                invalid("254 reads in flight", b -> b.initiatorDepth(254).responderResources(254)),
                invalid("ack timeout 0 (infinite) and 31", b -> b.ackTimeout(0).ackTimeout(31)),
                invalid("type of service 0 and 255", b -> b.typeOfService(0).typeOfService(255)),
                invalid("44 bytes private data with CREDITS", b -> b.privateData(new byte[44])),
                invalid("56 bytes private data with RAW", b -> b.protocol(Protocol.RAW).privateData(new byte[56])));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("limitValues")
    void limitValuesAreAccepted(String name, UnaryOperator<Builder> change) {
        ConnectionOptions o = change.apply(ConnectionOptions.defaults().toBuilder()).build();
        assertTrue(o.receiveBuffers() > 0);
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1})
    void nonPositiveTimeoutsAreRejected(long millis) {
        Duration d = Duration.ofMillis(millis);
        assertThrows(IllegalArgumentException.class, () -> ConnectionOptions.builder().timeout(Step.CONNECT, d));
        assertThrows(IllegalArgumentException.class,
                () -> ConnectionOptions.defaults().toBuilder().timeout(Step.ADDRESS, d));
    }

    @Test
    void privateDataIsRejectedWhenTooMuchForTheProtocol() {
        assertThrows(IllegalArgumentException.class,
                () -> ConnectionOptions.defaults().toBuilder().privateData(new byte[45]).build());
        ConnectionOptions raw = ConnectionOptions.builder().protocol(Protocol.RAW).privateData(new byte[56]).build();
        assertEquals(56, raw.privateData().length);
        // Switching to CREDITS would need 12 bytes the data already uses.
        assertThrows(IllegalArgumentException.class, () -> raw.toBuilder().protocol(Protocol.CREDITS).build());
    }

    @Test
    void nullProtocolIsRejected() {
        Builder b = ConnectionOptions.defaults().toBuilder();
        assertThrows(NullPointerException.class, () -> b.protocol(null));
    }

    @Test
    void privateDataIsCopiedOnTheWayInAndOut() {
        byte[] data = {1, 2, 3};
        Builder b = ConnectionOptions.defaults().toBuilder().privateData(data);
        data[0] = 9;
        ConnectionOptions o = b.build();
        assertArrayEquals(new byte[] {1, 2, 3}, o.privateData());
        o.privateData()[1] = 9;
        assertArrayEquals(new byte[] {1, 2, 3}, o.privateData());

        byte[] more = {4};
        ConnectionOptions p = o.toBuilder().privateData(more).build();
        more[0] = 9;
        assertArrayEquals(new byte[] {4}, p.privateData());
    }

    @Test
    void builtOptionsDoNotShareStateWithTheBuilder() {
        Builder b = ConnectionOptions.defaults().toBuilder().privateData(new byte[] {1});
        ConnectionOptions o = b.build();
        b.privateData(new byte[] {2}).timeout(Step.ADDRESS, Duration.ofMillis(1)).receiveBuffers(1);
        assertArrayEquals(new byte[] {1}, o.privateData());
        assertEquals(Duration.ofSeconds(2), o.timeout(Step.ADDRESS));
        assertEquals(32, o.receiveBuffers());
    }
}
