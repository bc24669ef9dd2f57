package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RdmaTestEnv;

/** The synchronous connection manager layer: address and route resolution, connect/accept, private data. */
class CmIT {
    private static final Duration T = Duration.ofSeconds(10);

    static CmEvent expect(EventChannel ch, CmEventType type) {
        CmEvent e = ch.awaitEvent(T);
        assertNotNull(e, "no " + type + " within " + T);
        assertEquals(type, e.type(), e::toString);
        return e;
    }

    private static byte[] prefix(byte[] data, int n) {
        return Arrays.copyOf(data, n);
    }

    @Test
    void connectAcceptExchangePrivateDataAndAMessage() {
        try (EventChannel serverCh = EventChannel.create(); EventChannel clientCh = EventChannel.create();
             Arena arena = Arena.ofShared()) {
            CmId listener = serverCh.createId(PortSpace.TCP);
            listener.bind(new InetSocketAddress(RdmaTestEnv.address(), 0));
            listener.listen(8);
            InetSocketAddress serverAddr = listener.localAddress();
            assertEquals(RdmaTestEnv.address(), serverAddr.getAddress());

            CmId client = clientCh.createId(PortSpace.TCP);
            client.resolveAddress(null, serverAddr, T);
            expect(clientCh, CmEventType.ADDR_RESOLVED);
            client.resolveRoute(T);
            expect(clientCh, CmEventType.ROUTE_RESOLVED);
            assertEquals(1, client.portNumber());

            ProtectionDomain clientPd = client.context().allocateProtectionDomain();
            CompletionQueue clientCq = client.context().createCompletionQueue(16, null, 0);
            QueuePair clientQp = client.createQueuePair(clientPd,
                    QpInitAttributes.builder(QpType.RC).completionQueue(clientCq).build());
            byte[] hello = "hello server".getBytes(StandardCharsets.US_ASCII);
            client.connect(ConnectionParameters.DEFAULTS.withPrivateData(hello));

            CmEvent request = expect(serverCh, CmEventType.CONNECT_REQUEST);
            assertSame(listener, request.listenId());
            CmId conn = request.id();
            // The CM pads private data to the protocol's size; what we sent is its prefix.
            assertArrayEquals(hello, prefix(request.privateData(), hello.length));
            assertEquals(client.localAddress(), conn.peerAddress());

            ProtectionDomain serverPd = conn.context().allocateProtectionDomain();
            CompletionQueue serverCq = conn.context().createCompletionQueue(16, null, 0);
            QueuePair serverQp = conn.createQueuePair(serverPd,
                    QpInitAttributes.builder(QpType.RC).completionQueue(serverCq).build());
            MemorySegment rbuf = arena.allocate(256);
            MemoryRegion rmr = serverPd.register(rbuf);
            serverQp.postReceive(new ReceiveRequests(1, 1).set(0, 1).sge(0, 0, rmr, 0, 256), 1);
            byte[] welcome = "welcome client".getBytes(StandardCharsets.US_ASCII);
            conn.accept(ConnectionParameters.DEFAULTS.withPrivateData(welcome));

            CmEvent established = expect(clientCh, CmEventType.ESTABLISHED);
            assertArrayEquals(welcome, prefix(established.privateData(), welcome.length));
            expect(serverCh, CmEventType.ESTABLISHED);
            assertEquals(QpState.RTS, clientQp.state());

            MemorySegment sbuf = arena.allocateFrom("over the CM", StandardCharsets.US_ASCII);
            MemoryRegion smr = clientPd.register(sbuf);
            clientQp.postSend(new SendRequests(1, 1).set(0, 2, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED))
                    .sge(0, 0, smr, 0, (int) sbuf.byteSize()), 1);
            Completions.awaitSuccess(clientCq, T);
            Completions.awaitSuccess(serverCq, T);
            assertEquals("over the CM", rbuf.getString(0, StandardCharsets.US_ASCII));

            // The active side's DISCONNECTED waits for the peer's DREP, which librdmacm sends only when
            // the passive side answers its own DISCONNECTED with rdma_disconnect.
            client.disconnect();
            expect(serverCh, CmEventType.DISCONNECTED);
            conn.disconnect();
            expect(clientCh, CmEventType.DISCONNECTED);
            assertEquals(QpState.ERR, clientQp.state());
        }
    }

    @Test
    void rejectionCarriesTheServersPrivateData() {
        try (EventChannel serverCh = EventChannel.create(); EventChannel clientCh = EventChannel.create()) {
            CmId listener = serverCh.createId(PortSpace.TCP);
            listener.bind(new InetSocketAddress(RdmaTestEnv.address(), 0));
            listener.listen(1);
            CmId client = clientCh.createId(PortSpace.TCP);
            client.resolveAddress(null, listener.localAddress(), T);
            expect(clientCh, CmEventType.ADDR_RESOLVED);
            client.resolveRoute(T);
            expect(clientCh, CmEventType.ROUTE_RESOLVED);
            client.createQueuePair(client.context().allocateProtectionDomain(), QpInitAttributes
                    .builder(QpType.RC).completionQueue(client.context().createCompletionQueue(4, null, 0)).build());
            client.connect(ConnectionParameters.DEFAULTS);

            CmEvent request = expect(serverCh, CmEventType.CONNECT_REQUEST);
            // The whole IB CM REJ private data field (148 bytes) reaches the client; one more is refused
            // before the kernel would (EINVAL), and the request can still be rejected afterwards.
            byte[] why = new byte[CmId.MAX_REJECT_PRIVATE_DATA];
            byte[] text = "go away".getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(text, 0, why, 0, text.length);
            why[why.length - 1] = (byte) 0xA5;
            IllegalArgumentException tooLong = org.junit.jupiter.api.Assertions.assertThrows(
                    IllegalArgumentException.class, () -> request.id().reject(new byte[why.length + 1]));
            org.junit.jupiter.api.Assertions.assertTrue(tooLong.getMessage().contains("148"), tooLong.getMessage());
            request.id().reject(why);
            CmEvent rejected = expect(clientCh, CmEventType.REJECTED);
            assertEquals(28, rejected.status(), "IB CM reject reason 28 = consumer reject");
            assertArrayEquals(why, prefix(rejected.privateData(), why.length));
            request.id().close();
        }
    }

    @Test
    void connectingToAPortWithoutListenerIsRejectedOrUnreachable() {
        try (EventChannel ch = EventChannel.create()) {
            CmId client = ch.createId(PortSpace.TCP);
            client.resolveAddress(null, new InetSocketAddress(RdmaTestEnv.address(), 1), T);
            expect(ch, CmEventType.ADDR_RESOLVED);
            client.resolveRoute(T);
            expect(ch, CmEventType.ROUTE_RESOLVED);
            client.createQueuePair(client.context().allocateProtectionDomain(), QpInitAttributes
                    .builder(QpType.RC).completionQueue(client.context().createCompletionQueue(4, null, 0)).build());
            client.connect(ConnectionParameters.DEFAULTS);
            CmEvent e = ch.awaitEvent(Duration.ofSeconds(30));
            assertNotNull(e);
            // RoCE answers a REQ to a closed port with a reject (reason 8, invalid service id).
            assertEquals(CmEventType.REJECTED, e.type(), e::toString);
        }
    }
}
