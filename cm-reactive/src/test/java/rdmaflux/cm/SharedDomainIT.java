package rdmaflux.cm;

import rdmaflux.cm.internal.cq.Devices;
import rdmaflux.cm.internal.loop.Loops;
import rdmaflux.cm.internal.memory.Registration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import rdmaflux.testing.RdmaResources;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;

/**
 * The resources connections share (docs/architecture.md): one protection domain per device per
 * {@link RdmaLoops}, whatever the number of connections, freed when the loops are disposed; one memory
 * region for the same memory registered twice in it, deregistered after the last holder closed it; and a
 * registration made through one connection sending through another of the same loops. Counted as the
 * kernel lists them ({@code rdma resource show}).
 */
class SharedDomainIT {
    private static final Duration T = Duration.ofSeconds(60);
    private static final int CONNECTIONS = 6;

    /** One subscription per connection (receive() takes one subscriber), its messages taken one at a time. */
    private final Map<RdmaConnection, LinkedBlockingQueue<Object>> inboxes = new ConcurrentHashMap<>();

    private byte[] next(RdmaConnection c) {
        LinkedBlockingQueue<Object> inbox = inboxes.computeIfAbsent(c, k -> {
            LinkedBlockingQueue<Object> q = new LinkedBlockingQueue<>();
            k.receiveBytes().subscribe(q::add, q::add);
            return q;
        });
        return Inbox.take(inbox, T);
    }

    @Test
    void connectionsOfOneLoopsShareOneProtectionDomainFreedWithTheLoops() {
        RdmaLoops loops = RdmaLoops.create("rdmaflux-it-domain", 2);
        ConnectionOptions client = ConnectionOptions.defaults().toBuilder().loops(loops)
                .receiveBuffers(8).sendBuffers(8).build();
        // The server is on the shared loops, whose domain is in the baseline already.
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults())) {
            Map<String, Integer> baseline = Resources.baseline(); // with the server's listener
            List<RdmaConnection> cs = Flux.range(0, CONNECTIONS)
                    .flatMap(i -> RdmaConnection.connect(echo.address(), client)).collectList().block(T);
            for (int i = 0; i < CONNECTIONS; i++) {
                RdmaConnection c = cs.get(i);
                c.send(Payloads.message(i, 100)).block(T);
                Payloads.verify(next(c), i, 100);
            }
            Map<String, Integer> open = RdmaResources.snapshot();
            // Each side of each connection has its QP, but there is one new domain, not one per connection
            // (before, this was 2 * CONNECTIONS: the client's and the server's sides each had their own).
            assertTrue(open.get("qp") - baseline.get("qp") >= 2 * CONNECTIONS, "qps while connected: " + open);
            assertEquals(1, open.get("pd") - baseline.get("pd"), "protection domains while connected: " + open);
            assertEquals(1, Devices.of((Loops) loops).domainCount());

            // Closing the connections leaves the domain: it belongs to the loops.
            disposeAll(cs);
            awaitBaselineWithTheDomain(baseline, "after the connections closed, the loops' domain left");

            loops.disposeNow(T);
            Resources.awaitBaseline(baseline, T, "after the loops were disposed");
            // Their per-device resources were closed with them: none can be made again.
            assertThrows(IllegalStateException.class, () -> Devices.of((Loops) loops));
        } finally {
            loops.disposeNow(T);
        }
    }

    @Test
    void connectionsCarveTheirBuffersFromSlabsDeregisteredWithTheLastConnection() {
        RdmaLoops loops = RdmaLoops.create("rdmaflux-it-slabs", 2);
        ConnectionOptions small = small(loops);
        try (EchoServer echo = new EchoServer(small)) {
            Map<String, Integer> baseline = Resources.baseline(); // with the server's listener
            List<RdmaConnection> cs = Flux.range(0, CONNECTIONS)
                    .flatMap(i -> RdmaConnection.connect(echo.address(), small)).collectList().block(T);
            for (int i = 0; i < CONNECTIONS; i++) {
                RdmaConnection c = cs.get(i);
                c.send(Payloads.message(i, 1000)).block(T);
                Payloads.verify(next(c), i, 1000);
            }
            Map<String, Integer> open = RdmaResources.snapshot();
            // Both sides' receive rings, send buffers and atomic words (three sizes) come from slabs: at most
            // three regions for the 2 * CONNECTIONS endpoints, where each registered three before slabs and
            // one (its receive ring) before rings came from slabs too.
            int regions = open.get("mr") - baseline.get("mr");
            assertTrue(regions >= 1 && regions <= 3, "regions for " + 2 * CONNECTIONS + " endpoints: " + regions);

            disposeAll(cs);
            // The server's sides close when their clients went: then every slab is free and deregistered.
            awaitBaselineWithTheDomain(baseline, "after the connections closed, the loops' domain left");
        } finally {
            loops.disposeNow(T);
        }
    }

    @Test
    void aMessageHeldPastItsConnectionKeepsItsBytesWhileTheSlabGoesWithTheOtherConnections() {
        RdmaLoops loops = RdmaLoops.create("rdmaflux-it-held", 2);
        ConnectionOptions small = small(loops);
        try (EchoServer echo = new EchoServer(small)) {
            Map<String, Integer> baseline = Resources.baseline();
            // Keeps the slab registered (a slab with every block back is gone, and its blocks with it).
            RdmaConnection keeper = RdmaConnection.connect(echo.address(), small).block(T);
            RdmaConnection first = RdmaConnection.connect(echo.address(), small).block(T);
            first.send(Payloads.message(0, 1000)).block(T);
            RdmaMessage held = first.receive().next().block(T);
            first.dispose();
            first.onDispose().block(T);
            long heldAt = held.data().address();
            // A freed block is the next one carved (its slab's free list is a stack): had the held message's
            // ring gone back, the next connections' receives would land in its buffers.
            List<RdmaConnection> later = Flux.range(1, CONNECTIONS)
                    .flatMap(i -> RdmaConnection.connect(echo.address(), small)).collectList().block(T);
            for (int i = 0; i < later.size(); i++) {
                later.get(i).send(Payloads.message(i + 1, 1000)).block(T);
                RdmaMessage m = later.get(i).receive().next().block(T);
                long at = m.data().address();
                Payloads.verify(m.data(), i + 1, 1000);
                m.release();
                assertTrue(at + 1000 <= heldAt || heldAt + 1000 <= at,
                        "a later message landed in the held one's buffer");
            }
            Payloads.verify(held.toByteArray(), 0, 1000);

            disposeAll(later);
            disposeAll(List.of(keeper));
            // The held message's block is retired, not in use: its slab is deregistered with the others'.
            awaitBaselineWithTheDomain(baseline, "with a message of a closed connection still held");
            Payloads.verify(held.toByteArray(), 0, 1000);
            held.release();
        } finally {
            loops.disposeNow(T);
        }
    }

    /**
     * {@return small buffers on {@code loops}, as a many-connection server would use: every ring fits a
     * slab's block}
     */
    private static ConnectionOptions small(RdmaLoops loops) {
        return ConnectionOptions.defaults().toBuilder().loops(loops).bufferSize(1024).receiveBuffers(8)
                .sendBuffers(8).build();
    }

    /**
     * Waits until the kernel's objects are at {@code baseline} plus what the loops keep on the device until they
     * are disposed: the protection domain, and the CM id that watches for the device's removal.
     */
    private static void awaitBaselineWithTheDomain(Map<String, Integer> baseline, String what) {
        Map<String, Integer> closed = new java.util.TreeMap<>(baseline);
        closed.merge("pd", 1, Integer::sum);
        closed.merge("cm_id", 1, Integer::sum);
        Resources.awaitBaseline(closed, T, what);
    }

    /** Disposes the connections and waits until each is gone. */
    private static void disposeAll(List<RdmaConnection> connections) {
        Flux.fromIterable(connections).flatMap(c -> {
            c.dispose();
            return c.onDispose();
        }).then().block(T);
    }

    /** Polls the kernel's count of memory regions until it is {@code expected}, then asserts it is. */
    private static void awaitRegions(int expected, String what) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        int now = RdmaResources.snapshot().get("mr");
        while (now != expected && System.nanoTime() < deadline) {
            Resources.sleep(100);
            now = RdmaResources.snapshot().get("mr");
        }
        assertEquals(expected, now, what);
    }

    @Test
    void theSameMemoryRegisteredTwiceIsOneRegionUntilBothHoldersClosedIt() {
        Map<String, Integer> baseline = Resources.baseline();
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults());
             Arena arena = Arena.ofShared()) {
            RdmaConnection a = RdmaConnection.connect(echo.address()).block(T);
            RdmaConnection b = RdmaConnection.connect(echo.address()).block(T);
            int mrs = RdmaResources.snapshot().get("mr");
            MemorySegment memory = arena.allocate(64 * 1024, 4096);

            RegisteredBuffer first = a.register(memory, AccessFlags.LOCAL_WRITE);
            assertEquals(mrs + 1, RdmaResources.snapshot().get("mr"), "one region for the first registration");
            // The same memory again, through the same connection and through another of the same loops: the
            // same region (the keys say so), no new one.
            RegisteredBuffer second = a.register(memory, AccessFlags.LOCAL_WRITE);
            RegisteredBuffer third = b.register(memory, AccessFlags.LOCAL_WRITE);
            assertEquals(mrs + 1, RdmaResources.snapshot().get("mr"), "the same memory registered three times");
            assertSame(Registration.of(first), Registration.of(second));
            assertSame(Registration.of(first), Registration.of(third));
            // Other access rights are another region: its keys must not grant more than was asked.
            RegisteredBuffer remote = a.register(memory, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
            assertNotSame(Registration.of(first), Registration.of(remote));
            assertEquals(mrs + 2, RdmaResources.snapshot().get("mr"));
            remote.close();
            assertEquals(mrs + 1, RdmaResources.snapshot().get("mr"));

            // Each holder closes its own lease; the region goes with the last one.
            first.close();
            first.close(); // idempotent: it must not take another holder's share
            assertEquals(mrs + 1, RdmaResources.snapshot().get("mr"), "two holders left");
            RuntimeException closedUse = assertThrows(RuntimeException.class,
                    () -> a.send(first).block(T));
            assertInstanceOf(IllegalStateException.class, closedUse, closedUse.toString());
            second.close();
            awaitRegions(mrs + 1, "one holder left");
            // The one left still works.
            memory.asSlice(0, 100).copyFrom(MemorySegment.ofBuffer(Payloads.message(7, 100)));
            b.send(third.slice(0, 100)).block(T);
            Payloads.verify(next(b), 7, 100);
            third.close();
            // Deregistered once the send's completion gave the region back (it has, or is about to).
            awaitRegions(mrs, "deregistered after the last holder closed it");

            // A connection's end closes what was registered through it, shared or not.
            RegisteredBuffer kept = b.register(memory, AccessFlags.LOCAL_WRITE);
            RegisteredBuffer dropped = a.register(memory, AccessFlags.LOCAL_WRITE);
            a.disposeNow(T);
            b.send(kept.slice(0, 100)).block(T);
            Payloads.verify(next(b), 7, 100);
            RuntimeException ended = assertThrows(RuntimeException.class, () -> b.send(dropped).block(T));
            assertInstanceOf(IllegalStateException.class, ended, ended.toString());
            b.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after the registrations and their connections");
    }

    @Test
    void aRegistrationSendsThroughAnotherConnectionOfTheSameLoopsButNotOfOtherLoops() {
        Map<String, Integer> baseline = Resources.baseline();
        RdmaLoops other = RdmaLoops.create("rdmaflux-it-domain-other", 1);
        try (EchoServer echo = new EchoServer(ConnectionOptions.defaults());
             Arena arena = Arena.ofShared()) {
            RdmaConnection a = RdmaConnection.connect(echo.address()).block(T);
            RdmaConnection b = RdmaConnection.connect(echo.address()).block(T);
            RdmaConnection elsewhere = RdmaConnection.connect(echo.address(),
                    ConnectionOptions.defaults().toBuilder().loops(other).build()).block(T);
            int small = 1000;
            int large = 3 * b.eagerMessageSize() + 17; // a large message: the peer reads it from this memory
            MemorySegment memory = arena.allocate(large, 4096);
            memory.asSlice(0, small).copyFrom(MemorySegment.ofBuffer(Payloads.message(1, small)));
            RegisteredBuffer buffer = a.register(memory, AccessFlags.LOCAL_WRITE);

            // Registered through a, sent through b: b checks the domain, not the connection.
            b.send(buffer.slice(0, small)).block(T);
            Payloads.verify(next(b), 1, small);
            MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(2, large)), 0, memory, 0, large);
            b.send(buffer).block(T);
            Payloads.verify(next(b), 2, large);
            // And through a itself, as before.
            a.send(buffer.slice(0, small)).block(T);
            Payloads.verify(next(a), 2, small);

            // Other loops have another domain: a clear refusal, not a protection error that fails the connection.
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> elsewhere.send(buffer).block(T));
            assertTrue(refused.getMessage().contains("another protection domain"), refused.getMessage());
            IllegalArgumentException refusedWrite = assertThrows(IllegalArgumentException.class,
                    () -> elsewhere.write(buffer, new rdmaflux.verbs.RemoteBuffer(0, 8, 0)).block(T));
            assertTrue(refusedWrite.getMessage().contains("another protection domain"), refusedWrite.getMessage());
            elsewhere.send(Payloads.message(3, 10)).block(T);
            Payloads.verify(next(elsewhere), 3, 10);

            buffer.close();
            a.disposeNow(T);
            b.disposeNow(T);
            elsewhere.disposeNow(T);
        } finally {
            other.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after sending a registration through other connections");
    }
}
