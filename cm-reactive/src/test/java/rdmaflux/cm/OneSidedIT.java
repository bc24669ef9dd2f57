package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import reactor.core.publisher.Flux;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * RDMA read, write, write with immediate and atomics against memory the server registered and
 * advertised over the connection itself, as an application would. The server checks what landed in
 * its memory when the client tells it so with a message: RC delivers that message after the write
 * it follows, so the check sees the write.
 */
class OneSidedIT {
    private static final Duration T = Duration.ofSeconds(60);
    /** Half for the plain write, half for the write with immediate: 256 KiB, 256 packets each. */
    private static final int REGION = 512 * 1024;
    private static final int HALF = REGION / 2;
    private static final long WORD_START = 42;
    private static final int IMMEDIATE = 0xCAFE_F00D;

    /** The server side: owns a region and an atomic word, advertises both, answers check requests. */
    private static final class Target {
        final Arena arena = Arena.ofShared();
        final MemorySegment region = arena.allocate(REGION, 4096);
        final MemorySegment word = arena.allocate(64, 64);

        /** @return the reply to one message: "ok ..." or what differs */
        String onMessage(RdmaMessage m) {
            if (m.isWriteNotification()) {
                if (m.immediate() != IMMEDIATE) {
                    return "bad immediate " + Integer.toHexString(m.immediate());
                }
                return check(region.asSlice(HALF, HALF), 3, "imm-ok");
            }
            String command = new String(m.toByteArray(), StandardCharsets.UTF_8);
            return switch (command) {
                case "check-write" -> check(region.asSlice(0, HALF), 2, "write-ok");
                case "word" -> "word " + word.get(ValueLayout.JAVA_LONG, 0);
                default -> "unknown command " + command;
            };
        }

        private static String check(MemorySegment data, int seq, String ok) {
            try {
                Payloads.verify(data, seq, (int) data.byteSize());
                return ok;
            } catch (AssertionError e) {
                return e.getMessage();
            }
        }
    }

    @Test
    void readWriteWriteWithImmediateAndAtomicsThroughAdvertisedBuffers() {
        Target target = new Target();
        RdmaServer server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0),
                ConnectionOptions.defaults(), AcceptFilter.ACCEPT_ALL).block(T);
        try (Arena local = Arena.ofShared()) {
            server.connections().subscribe(c -> {
                MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(1, REGION)), 0, target.region, 0, REGION);
                target.word.set(ValueLayout.JAVA_LONG, 0, WORD_START);
                RegisteredBuffer region = c.register(target.region, AccessFlags.REMOTE_ALL);
                RegisteredBuffer word = c.register(target.word, AccessFlags.REMOTE_ALL).slice(0, 8);
                ByteBuffer advert = ByteBuffer.allocate(2 * RemoteBuffer.ENCODED_SIZE);
                region.remote().writeTo(advert);
                word.remote().writeTo(advert);
                c.send(advert.flip()).then(c.receive().concatMap(m -> {
                    String reply;
                    try {
                        reply = target.onMessage(m);
                    } finally {
                        m.release();
                    }
                    return c.send(ByteBuffer.wrap(reply.getBytes(StandardCharsets.UTF_8)));
                }).then()).subscribe(null, e -> { });
            });

            RdmaConnection c = RdmaConnection.connect(server.address()).block(T);
            // The first message is the advert; every later one answers a request, in order.
            var inbox = new java.util.concurrent.LinkedBlockingQueue<Object>();
            c.receiveBytes().subscribe(inbox::add, inbox::add);
            ByteBuffer advert = ByteBuffer.wrap(take(inbox, byte[].class));
            RemoteBuffer remoteRegion = RemoteBuffer.readFrom(advert);
            RemoteBuffer remoteWord = RemoteBuffer.readFrom(advert);
            assertEquals(REGION, remoteRegion.length());
            assertEquals(8, remoteWord.length());

            RegisteredBuffer buf = c.register(local.allocate(REGION, 4096), AccessFlags.LOCAL_WRITE);

            // Read: the server's whole region, then a slice at an odd offset.
            c.read(buf, remoteRegion).block(T);
            Payloads.verify(buf.segment(), 1, REGION);
            buf.segment().fill((byte) 0);
            c.read(buf.slice(0, 1000), remoteRegion.slice(4, 1000)).block(T);
            assertEquals(-1, MemorySegment.mismatch(buf.segment(), 0, 1000,
                    MemorySegment.ofBuffer(Payloads.message(1, REGION)), 4, 1004), "sliced read");

            // Write the first half, then ask the server to look.
            fill(buf.segment().asSlice(0, HALF), 2);
            c.write(buf.slice(0, HALF), remoteRegion.slice(0, HALF)).block(T);
            assertEquals("write-ok", request(c, inbox, "check-write"));

            // Write with immediate into the second half: the server is notified by its receive().
            fill(buf.segment().asSlice(HALF, HALF), 3);
            c.writeWithImmediate(buf.slice(HALF, HALF), remoteRegion.slice(HALF, HALF), IMMEDIATE).block(T);
            assertEquals("imm-ok", text(inbox));

            // Read back everything the two writes put there.
            buf.segment().fill((byte) 0);
            c.read(buf, remoteRegion).block(T);
            Payloads.verify(buf.segment().asSlice(0, HALF), 2, HALF);
            Payloads.verify(buf.segment().asSlice(HALF, HALF), 3, HALF);

            // Atomics: each returns the value before it.
            assertEquals(WORD_START, c.compareAndSwap(remoteWord, WORD_START, 100).block(T));
            assertEquals(100L, c.compareAndSwap(remoteWord, WORD_START, 7).block(T), "failed CAS returns current");
            assertEquals(100L, c.fetchAndAdd(remoteWord, 5).block(T));
            assertEquals(105L, c.fetchAndAdd(remoteWord, -3).block(T));
            assertEquals("word 102", request(c, inbox, "word"));
            // 200 concurrent fetch-and-adds: each sees a distinct old value, none is lost.
            int n = 200;
            List<Long> olds = Flux.range(0, n).flatMap(i -> c.fetchAndAdd(remoteWord, 1), 64).collectList().block(T);
            Set<Long> distinct = new TreeSet<>(olds);
            assertEquals(n, distinct.size(), "old values repeat: " + olds);
            assertEquals(102L, distinct.iterator().next());
            assertEquals(102L + n - 1, ((TreeSet<Long>) distinct).last());
            assertEquals("word " + (102 + n), request(c, inbox, "word"));
            RegisteredBuffer word = buf.slice(0, 8);
            c.read(word, remoteWord).block(T);
            assertEquals(102L + n, word.segment().get(ValueLayout.JAVA_LONG, 0));

            c.disposeNow(T);
        } finally {
            server.disposeNow(T);
            target.arena.close();
        }
    }

    private static void fill(MemorySegment s, int seq) {
        MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(seq, (int) s.byteSize())), 0, s, 0, s.byteSize());
    }

    private static String request(RdmaConnection c, java.util.concurrent.BlockingQueue<Object> inbox, String what) {
        c.send(ByteBuffer.wrap(what.getBytes(StandardCharsets.UTF_8))).block(T);
        return text(inbox);
    }

    private static String text(java.util.concurrent.BlockingQueue<Object> inbox) {
        return new String(take(inbox, byte[].class), StandardCharsets.UTF_8);
    }

    private static <X> X take(java.util.concurrent.BlockingQueue<Object> inbox, Class<X> type) {
        try {
            Object o = inbox.poll(T.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
            if (o instanceof Throwable e) {
                throw new AssertionError("receive failed", e);
            }
            if (o == null) {
                throw new AssertionError("no message within " + T);
            }
            return type.cast(o);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
