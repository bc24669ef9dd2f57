package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static rdmaflux.cm.ChecksumServer.crc;
import static rdmaflux.cm.ChecksumServer.payload;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;

/**
 * Messages of any size (docs/protocol.md): larger than the receive buffers they go by RDMA READ, and
 * arrive whole, checksummed, in order with the small ones, within a memory budget on both sides.
 */
class LargeMessagesIT {
    private static final Duration T = Duration.ofSeconds(120);
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;

    /**
     * Sends each message and checks the server's length and checksum replies, in order.
     *
     * @return how long sending took: until the last send completed, which for a large one is when the
     *         server has read it
     */
    private static Duration roundTrip(RdmaConnection c, List<MemorySegment> messages) {
        LinkedBlockingQueue<Object> replies = new LinkedBlockingQueue<>();
        Disposable r = c.receiveBytes().subscribe(replies::add, replies::add);
        Duration sending = roundTrip(c, replies, messages);
        r.dispose();
        return sending;
    }

    /** {@link #roundTrip(RdmaConnection, List)} on a connection whose replies already go to {@code replies}. */
    private static Duration roundTrip(RdmaConnection c, LinkedBlockingQueue<Object> replies,
                                      List<MemorySegment> messages) {
        long start = System.nanoTime();
        c.send(Flux.fromIterable(messages).map(MemorySegment::asByteBuffer)).block(T);
        Duration sending = Duration.ofNanos(System.nanoTime() - start);
        for (int i = 0; i < messages.size(); i++) {
            MemorySegment sent = messages.get(i);
            ByteBuffer reply = ByteBuffer.wrap(take(replies)).order(ByteOrder.BIG_ENDIAN);
            assertEquals(sent.byteSize(), reply.getLong(), "length of message " + i);
            assertEquals(crc(sent), reply.getLong(), "checksum of message " + i + " (" + sent.byteSize() + " bytes)");
        }
        return sending;
    }

    @Test
    void everySizeFromZeroToSixtyFourMiBArrivesWholeAndInOrder() {
        Map<String, Integer> baseline = Resources.baseline();
        try (ChecksumServer s = new ChecksumServer(ConnectionOptions.defaults(), Duration.ZERO);
             Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(s.server.address()).block(T);
            int eager = c.eagerMessageSize();
            assertEquals(Integer.MAX_VALUE, c.maxMessageSize());
            long[] sizes = {0, 1, eager - 1, eager, eager + 1, 64 * KIB, MIB, 64 * MIB};
            List<MemorySegment> messages = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                messages.add(payload(arena, i, sizes[i]));
            }
            LinkedBlockingQueue<Object> replies = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(replies::add, replies::add);
            roundTrip(c, replies, messages);
            // Heap buffers are copied once into registered memory; off-heap ones above are read in place.
            ByteBuffer heap = ByteBuffer.allocate(3 * MIB);
            MemorySegment.copy(payload(arena, 99, 3 * MIB), 0, MemorySegment.ofBuffer(heap), 0, 3 * MIB);
            roundTrip(c, replies, List.of(MemorySegment.ofBuffer(heap)));
            c.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after large messages");
    }

    @Test
    void messagesOfAtMostSixtyFourKiBAreReadIntoSlabsNotIntoARegionEach() {
        Map<String, Integer> baseline = Resources.baseline();
        int size = 48 * KIB; // above the 8 KiB receive buffers: by rendezvous
        int count = 24; // held at once, within the 32 credits the descriptors take
        LinkedBlockingQueue<RdmaMessage> held = new LinkedBlockingQueue<>();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL).block(T);
        Disposable receiving = server.connections().flatMap(RdmaConnection::receive).subscribe(held::add);
        try (Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(server.address()).block(T);
            // One registration for all of them, read in place: the sender registers nothing of this length.
            RegisteredBuffer source = c.register(arena.allocate((long) size * count, 4096),
                    AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
            List<RegisteredBuffer> messages = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                RegisteredBuffer m = source.slice((long) i * size, size);
                MemorySegment.copy(payload(arena, i, size), 0, m.segment(), 0, size);
                messages.add(m);
            }
            Flux.fromIterable(messages).concatMap(c::send).then().block(T);
            org.awaitility.Awaitility.await().atMost(T).until(() -> held.size() == count);
            // All of them read and held: a region registered per message would have the message's length.
            assertEquals(0, RdmaResources.regionsOfLength(size), "regions registered for single messages");
            for (int i = 0; i < count; i++) {
                RdmaMessage m = held.poll();
                assertEquals(size, m.length());
                assertEquals(crc(messages.get(i).segment()), crc(m.data()), "message " + i);
                m.release();
            }
            source.close();
            c.disposeNow(T);
        } finally {
            receiving.dispose();
            server.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after messages read into slabs");
    }

    @Test
    void aFiveHundredTwelveMiBMessageArrivesWhole() {
        try (ChecksumServer s = new ChecksumServer(ConnectionOptions.defaults(), Duration.ZERO);
             Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(s.server.address()).block(T);
            long start = System.nanoTime();
            roundTrip(c, List.of(payload(arena, 7, 512L * MIB)));
            System.out.printf("512 MiB by RDMA READ in %d ms (beyond the 64 MiB budget: it goes alone)%n",
                    (System.nanoTime() - start) / 1_000_000);
            c.disposeNow(T);
        }
    }

    @Test
    void smallAndLargeMessagesInterleavedKeepTheirOrder() {
        interleaved(ConnectionOptions.defaults());
    }

    /**
     * The same with both sides on shared completion queues: the receiver's RDMA READs, the "finished"
     * messages and the sends all complete through the loop's shared CQ and the connection's inbox.
     */
    @Test
    void smallAndLargeMessagesInterleavedOnSharedCompletionQueues() {
        interleaved(ConnectionOptions.builder().sharedCompletionQueue(true).build());
    }

    private static void interleaved(ConnectionOptions options) {
        try (ChecksumServer s = new ChecksumServer(options, Duration.ZERO);
             Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(s.server.address(), options).block(T);
            List<MemorySegment> messages = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                messages.add(payload(arena, i, i % 2 == 0 ? 100 + i : (i % 3 + 1) * 300 * KIB));
            }
            roundTrip(c, messages);
            c.disposeNow(T);
        }
    }

    @Test
    void aSlowConsumerKeepsRegisteredMemoryWithinTheBudgets() throws InterruptedException {
        long budget = 4 * MIB;
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().largeMessageBudget(budget).build();
        try (ChecksumServer s = new ChecksumServer(options, Duration.ofMillis(300)); Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(s.server.address(), options).block(T);
            List<MemorySegment> messages = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                // On the heap: the sender copies each into registered memory, which the budget must bound too.
                ByteBuffer heap = ByteBuffer.allocate(MIB);
                MemorySegment.copy(payload(arena, i, MIB), 0, MemorySegment.ofBuffer(heap), 0, MIB);
                messages.add(MemorySegment.ofBuffer(heap));
            }
            AtomicLong peak = new AtomicLong();
            java.util.concurrent.atomic.AtomicBoolean sampling = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread sampler = Thread.ofPlatform().daemon().start(() -> {
                while (sampling.get()) {
                    peak.accumulateAndGet(RdmaResources.registeredBytes(MIB), Math::max);
                }
            });
            Duration sending = roundTrip(c, messages);
            sampling.set(false);
            sampler.join();
            System.out.printf("16 x 1 MiB to a consumer holding each 300 ms: sent in %d ms, peak registered in "
                    + "large messages %d MiB (budget %d MiB per side)%n", sending.toMillis(), peak.get() / MIB,
                    budget / MIB);
            assertTrue(peak.get() > 0, "the sampler saw the large messages' regions");
            assertTrue(peak.get() <= 2 * budget, "registered " + peak.get() + " bytes, more than both budgets");
            // The receiver reads a message only when the consumer released one: the last of 16 can only be
            // read after about 16 - 4 (its budget) releases, 300 ms apart.
            assertTrue(sending.toMillis() >= 10 * 300, "the sender kept the slow consumer's pace: " + sending);
            c.disposeNow(T);
        }
    }

    @Test
    void aQueuedSendThatIsCancelledIsNeverSentNorRead() {
        ConnectionOptions few = ConnectionOptions.defaults().toBuilder().receiveBuffers(2).build();
        LinkedBlockingQueue<RdmaMessage> held = new LinkedBlockingQueue<>();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), few,
                AcceptFilter.ACCEPT_ALL).block(T);
        try {
            server.connections().subscribe(sc -> sc.receive().subscribe(held::add));
            RdmaConnection c = RdmaConnection.connect(server.address()).block(T);
            // Two credits: two messages go, the server holds them, the third waits for a credit.
            c.send(ByteBuffer.wrap(new byte[] {1})).block(T);
            c.send(ByteBuffer.wrap(new byte[] {2})).block(T);
            ByteBuffer third = ByteBuffer.wrap(new byte[] {3});
            Throwable e = assertThrows(Throwable.class, () -> c.send(third).timeout(Duration.ofMillis(500)).block(T));
            assertInstanceOf(java.util.concurrent.TimeoutException.class, e.getCause() != null ? e.getCause() : e);
            third.put(0, (byte) 'X'); // the cancelled send must not read this any more
            ByteBuffer bigThird = ByteBuffer.allocate(64 * KIB);
            Mono<Void> big = c.send(bigThird);
            assertThrows(Throwable.class, () -> big.timeout(Duration.ofMillis(500)).block(T));
            c.send(ByteBuffer.wrap(new byte[] {4})).subscribe();
            for (int expected : new int[] {1, 2}) {
                RdmaMessage m = poll(held);
                assertEquals(expected, m.toByteArray()[0]);
                m.release(); // a credit back: only the fourth message may use it
            }
            RdmaMessage next = poll(held);
            assertEquals(1, next.length());
            assertEquals(4, next.toByteArray()[0], "the withdrawn messages were never sent");
            next.release();
            c.disposeNow(T);
        } finally {
            server.disposeNow(T);
        }
    }

    @Test
    void aPeerKilledInTheMiddleOfLargeMessagesFailsThemTypedAndLeaksNothing() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        try (PeerProcess peer = PeerProcess.start("echo"); Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(peer.address(), PeerMain.OPTIONS).block(T);
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            c.receive().subscribe(inbox::add, inbox::add);
            // The echo peer reads the first one (its send completes), then sends it back: this side is
            // reading it when the peer dies. The second one is still being read by the peer, or queued.
            MemorySegment big = payload(arena, 1, 256L * MIB);
            c.send(big).block(T);
            Mono<Void> second = c.send(payload(arena, 2, 64L * MIB)).cache();
            second.subscribe(null, e -> { });
            Resources.sleep(500);
            peer.kill();
            Object end = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
            while (end instanceof RdmaMessage m) { // an echo that made it before the kill
                m.release();
                end = inbox.poll(T.toSeconds(), TimeUnit.SECONDS);
            }
            System.out.println("peer killed during large messages: receive() ended with " + end);
            assertInstanceOf(RdmaCmException.class, end, String.valueOf(end));
            Throwable sendEnd = assertThrows(Throwable.class, () -> second.block(T));
            assertInstanceOf(RdmaCmException.class, sendEnd, sendEnd.toString());
            c.disposeNow(T);
        }
        // The source registered in place and the region being read into are gone with the connection.
        Resources.awaitBaseline(baseline, T, "after a peer died in the middle of large messages");
        assertEquals(0, RdmaResources.registeredBytes(MIB), "large-message regions left registered");
    }

    @Test
    void registeredMemoryIsSentWithoutACopyAndOutlivesAnEarlyClose() {
        Map<String, Integer> baseline = Resources.baseline();
        try (ChecksumServer s = new ChecksumServer(ConnectionOptions.defaults(), Duration.ZERO);
             Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(s.server.address()).block(T);
            LinkedBlockingQueue<Object> replies = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(replies::add, replies::add);
            MemorySegment small = payload(arena, 1, 100);
            MemorySegment readable = payload(arena, 2, 16L * MIB);
            MemorySegment local = payload(arena, 3, 2L * MIB);
            RegisteredBuffer smallBuf = c.register(small, AccessFlags.LOCAL_WRITE);
            // REMOTE_READ: the peer reads it in place; LOCAL_WRITE only: registered once more for the peer.
            RegisteredBuffer readableBuf = c.register(readable, AccessFlags.of(AccessFlag.LOCAL_WRITE,
                    AccessFlag.REMOTE_READ));
            RegisteredBuffer localBuf = c.register(local, AccessFlags.LOCAL_WRITE);
            for (RegisteredBuffer b : List.of(smallBuf, readableBuf, localBuf, readableBuf.slice(MIB, 3 * MIB))) {
                c.send(b).block(T);
                ByteBuffer reply = ByteBuffer.wrap(take(replies));
                assertEquals(b.length(), reply.getLong());
                assertEquals(crc(b.segment()), reply.getLong(), "checksum of " + b.length() + " registered bytes");
            }

            // Closed while the peer is still reading it: deregistered only once the read is done.
            Mono<Void> sending = c.send(readableBuf).cache();
            sending.subscribe(null, e -> { });
            readableBuf.close();
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> c.send(readableBuf).block(T));
            assertTrue(refused.getMessage().contains("closed"), refused.getMessage());
            sending.block(T);
            ByteBuffer reply = ByteBuffer.wrap(take(replies));
            assertEquals(readable.byteSize(), reply.getLong());
            assertEquals(crc(readable), reply.getLong(), "the region stayed registered until the peer had read it");
            assertEquals(0, RdmaResources.registeredBytes(16L * MIB), "deregistered once the send ended");
            smallBuf.close();
            localBuf.close();
            c.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after zero-copy sends");
    }

    @Test
    void largeMessagesLandInMemoryTheApplicationSupplies() {
        List<MemorySegment> supplied = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (Arena mine = Arena.ofShared(); Arena arena = Arena.ofShared()) {
            ConnectionOptions options = ConnectionOptions.defaults().toBuilder()
                    .largeMessageMemory(size -> {
                        MemorySegment m = mine.allocate(size, 4096);
                        supplied.add(m);
                        return m;
                    }).build();
            try (ChecksumServer s = new ChecksumServer(options, Duration.ZERO)) {
                RdmaConnection c = RdmaConnection.connect(s.server.address()).block(T);
                List<MemorySegment> messages = List.of(payload(arena, 1, 100), payload(arena, 2, 5L * MIB),
                        payload(arena, 3, 20), payload(arena, 4, 300L * KIB));
                roundTrip(c, messages);
                assertEquals(2, supplied.size(), "one allocation per large message, none for small ones");
                // The messages were read straight into the application's memory, which it keeps. The two
                // allocations run in parallel, so they are matched by size.
                for (MemorySegment sent : List.of(messages.get(1), messages.get(3))) {
                    MemorySegment landed = supplied.stream().filter(m -> m.byteSize() == sent.byteSize()).findFirst()
                            .orElseThrow(() -> new AssertionError("no memory supplied for " + sent.byteSize()));
                    assertEquals(crc(sent), crc(landed), "the message in the application's memory");
                }
                c.disposeNow(T);
            }
        }
    }

    @Test
    void aPostedSendThatIsCancelledStillArrivesAndIsFreedAfterwards() {
        Map<String, Integer> baseline = Resources.baseline();
        try (ChecksumServer s = new ChecksumServer(ConnectionOptions.defaults(), Duration.ZERO);
             Arena arena = Arena.ofShared()) {
            RdmaConnection c = RdmaConnection.connect(s.server.address()).block(T);
            LinkedBlockingQueue<Object> replies = new LinkedBlockingQueue<>();
            c.receiveBytes().subscribe(replies::add, replies::add);
            MemorySegment big = payload(arena, 8, 32L * MIB);
            // Registered with remote read, it is posted at once (a credit is free); cancelled while the peer
            // reads it, it stays the device's: it still arrives, and its lease ends when the peer finished.
            RegisteredBuffer buf = c.register(big, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
            Throwable e = assertThrows(Throwable.class, () -> c.send(buf).timeout(Duration.ofMillis(50)).block(T));
            assertInstanceOf(java.util.concurrent.TimeoutException.class, e.getCause() != null ? e.getCause() : e);
            buf.close(); // deferred while the send holds its lease
            ByteBuffer reply = ByteBuffer.wrap(take(replies));
            assertEquals(big.byteSize(), reply.getLong(), "the cancelled send still arrived whole");
            assertEquals(crc(big), reply.getLong());
            // Deregistered once the peer said it finished, though nobody waited for that any more.
            long deadline = System.nanoTime() + T.toNanos();
            while (RdmaResources.registeredBytes(32L * MIB) != 0) {
                assertTrue(System.nanoTime() < deadline, "the cancelled send's registration was never deregistered");
                Resources.sleep(100);
            }
            c.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after a cancelled posted send");
    }

    @Test
    void theRawProtocolHasNoLargeMessages() {
        ConnectionOptions raw = ConnectionOptions.builder().protocol(ConnectionOptions.Protocol.RAW).build();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), raw,
                AcceptFilter.ACCEPT_ALL).block(T);
        try {
            RdmaConnection c = RdmaConnection.connect(server.address(), raw).block(T);
            assertEquals(c.eagerMessageSize(), c.maxMessageSize());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.send(ByteBuffer.allocate(c.eagerMessageSize() + 1)).block(T));
            assertTrue(e.getMessage().contains("does not speak large messages"), e.getMessage());
            c.disposeNow(T);
        } finally {
            server.disposeNow(T);
        }
    }

    private static RdmaMessage poll(LinkedBlockingQueue<RdmaMessage> q) {
        try {
            RdmaMessage m = q.poll(T.toSeconds(), TimeUnit.SECONDS);
            if (m == null) {
                throw new AssertionError("no message within " + T);
            }
            return m;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static byte[] take(LinkedBlockingQueue<Object> inbox) {
        return Inbox.take(inbox, T);
    }
}
