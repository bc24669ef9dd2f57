package rdmaflux.cm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.Disposable;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * Test fixture: child processes started with {@link ProcessBuilder} over and over while registered memory is
 * in use by the device ({@link ForkExecIT}). Two connections in this JVM carry, at the same time:
 * <ul>
 *   <li>large messages of 3 to 6 MiB (the rendezvous path: the receiver RDMA-READs them out of the sender's
 *   registered memory), from the heap (copied into registered memory) and off the heap (read in place), each
 *   answered by a {@link ChecksumServer} with its length and CRC32C;</li>
 *   <li>RDMA WRITEs of 1 MiB into a region the other side registered, each read back by an RDMA READ and
 *   compared byte by byte ({@link Payloads}); the source is rewritten before every write, so a page the
 *   device still saw in its pre-fork copy would show as a stale write.</li>
 * </ul>
 * Children ({@code /bin/true}) start one after another until enough have run and enough messages and
 * writes completed while they did. Also a main class, to run it in a JVM with other launch options.
 */
final class ForkExecScenario {
    private static final int MIB = 1 << 20;
    /** Large-message sizes, odd ones included so the last page is partial. */
    private static final long[] SIZES = {3L * MIB + 5, 4L * MIB, 6L * MIB + 123};
    private static final Duration STEP = Duration.ofSeconds(120);

    /**
     * What ran while the children started.
     *
     * @param children children started, each exited 0
     * @param messages large messages whose checksum came back right, after the first child started
     * @param messageBytes their bytes
     * @param writes RDMA writes read back intact, after the first child started
     */
    record Result(int children, int messages, long messageBytes, int writes) {
    }

    private ForkExecScenario() {
    }

    /**
     * Runs the scenario.
     *
     * @param minChildren children to start at least
     * @param minMessages large messages to complete at least while children start
     * @param minWrites writes to complete at least while children start
     * @param within the longest the children's loop may take
     * @return what ran
     * @throws AssertionError for a child that failed, a checksum or a read-back that differed, or the time
     */
    static Result run(int minChildren, int minMessages, int minWrites, Duration within) throws Exception {
        InetSocketAddress any = new InetSocketAddress(RdmaTestEnv.address(), 0);
        CompletableFuture<RemoteBuffer> target = new CompletableFuture<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger messages = new AtomicInteger();
        AtomicInteger writes = new AtomicInteger();
        java.util.concurrent.atomic.AtomicLong bytes = new java.util.concurrent.atomic.AtomicLong();
        try (ChecksumServer sums = new ChecksumServer(PeerMain.OPTIONS, Duration.ZERO);
             Arena targetMemory = Arena.ofShared()) {
            RdmaServer writeServer = RdmaServer.bind(any, PeerMain.OPTIONS, AcceptFilter.ACCEPT_ALL).block(STEP);
            // The target of the writes: registered by the server's side, its key handed over in this JVM.
            Disposable serving = writeServer.connections().subscribe(c -> target.complete(
                    c.register(targetMemory.allocate(MIB, 4096), AccessFlags.REMOTE_ALL).remote()));
            RdmaConnection msg = RdmaConnection.connect(sums.address(), PeerMain.OPTIONS).block(STEP);
            RdmaConnection rma = RdmaConnection.connect(writeServer.address(), PeerMain.OPTIONS).block(STEP);
            try {
                RemoteBuffer remote = target.get(STEP.toSeconds(), TimeUnit.SECONDS);
                LinkedBlockingQueue<Object> replies = new LinkedBlockingQueue<>();
                msg.receiveBytes().subscribe(replies::add, replies::add);
                // One buffer for every off-heap message, rewritten by the CPU for each while children start:
                // the sender's pages the peer READs. Shared: the worker threads register it.
                MemorySegment reused = Arena.ofAuto().allocate(SIZES[SIZES.length - 1], 4096);
                CompletableFuture<Void> sending = worker("fork-exec-messages", stop, seq -> {
                    long size = SIZES[seq % SIZES.length];
                    MemorySegment m = ChecksumServer.fill(reused.asSlice(0, size), seq);
                    if (seq % 2 == 0) {
                        msg.send(m).block(STEP); // off-heap: the peer reads it where it is
                    } else {
                        ByteBuffer heap = ByteBuffer.allocate((int) size);
                        MemorySegment.copy(m, 0, MemorySegment.ofBuffer(heap), 0, size);
                        msg.send(heap).block(STEP); // heap: copied into registered memory first
                    }
                    Object got = replies.poll(STEP.toSeconds(), TimeUnit.SECONDS);
                    if (!(got instanceof byte[] r)) {
                        throw new AssertionError("large message " + seq + ": reply " + got, got instanceof Throwable t ? t : null);
                    }
                    ByteBuffer reply = ByteBuffer.wrap(r).order(ByteOrder.BIG_ENDIAN);
                    long length = reply.getLong();
                    long crc = reply.getLong();
                    if (length != size || crc != ChecksumServer.crc(m)) {
                        throw new AssertionError("large message " + seq + " (" + size + " bytes) arrived as "
                                + length + " bytes with CRC32C " + Long.toHexString(crc) + ", sent "
                                + Long.toHexString(ChecksumServer.crc(m)));
                    }
                    bytes.addAndGet(size);
                    messages.incrementAndGet();
                });
                RegisteredBuffer source = rma.register(Arena.ofAuto().allocate(MIB, 4096), AccessFlags.LOCAL_WRITE);
                RegisteredBuffer back = rma.register(Arena.ofAuto().allocate(MIB, 4096), AccessFlags.LOCAL_WRITE);
                CompletableFuture<Void> writing = worker("fork-exec-writes", stop, seq -> {
                    // Rewritten by the CPU before each write: after a fork, these are the pages copy-on-write would split.
                    MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(seq, MIB)), 0, source.segment(), 0, MIB);
                    rma.write(source, remote).block(STEP);
                    back.segment().fill((byte) 0);
                    rma.read(back, remote).block(STEP);
                    Payloads.verify(back.segment(), seq, MIB);
                    writes.incrementAndGet();
                });
                int children = 0;
                int messagesBefore = -1;
                int writesBefore = -1;
                long deadline = System.nanoTime() + within.toNanos();
                try {
                    while (children < minChildren || messages.get() - messagesBefore < minMessages
                            || writes.get() - writesBefore < minWrites) {
                        if (sending.isDone() || writing.isDone()) {
                            break; // a worker failed: its error is reported below
                        }
                        if (System.nanoTime() > deadline) {
                            throw new AssertionError("after " + within + ": " + children + " children, "
                                    + (messages.get() - messagesBefore) + " messages, " + (writes.get() - writesBefore)
                                    + " writes; wanted " + minChildren + ", " + minMessages + ", " + minWrites);
                        }
                        Process p = new ProcessBuilder("/bin/true").redirectErrorStream(true).start();
                        if (messagesBefore < 0) {
                            messagesBefore = messages.get();
                            writesBefore = writes.get();
                        }
                        if (!p.waitFor(STEP.toSeconds(), TimeUnit.SECONDS)) {
                            p.destroyForcibly();
                            throw new AssertionError("child " + children + " (/bin/true) still running after " + STEP);
                        }
                        if (p.exitValue() != 0) {
                            throw new AssertionError("child " + children + " (/bin/true) exited " + p.exitValue());
                        }
                        children++;
                    }
                } finally {
                    stop.set(true);
                }
                sending.get(STEP.toSeconds(), TimeUnit.SECONDS);
                writing.get(STEP.toSeconds(), TimeUnit.SECONDS);
                return new Result(children, messages.get() - messagesBefore, bytes.get(), writes.get() - writesBefore);
            } finally {
                stop.set(true);
                msg.disposeNow(STEP);
                rma.disposeNow(STEP);
                serving.dispose();
                writeServer.disposeNow(STEP);
            }
        }
    }

    /** A platform thread running {@code body} with 0, 1, 2... until {@code stop}; its future fails with its error. */
    private static CompletableFuture<Void> worker(String name, AtomicBoolean stop, Body body) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread.ofPlatform().name(name).daemon().start(() -> {
            try {
                for (int seq = 0; !stop.get(); seq++) {
                    body.run(seq);
                }
                done.complete(null);
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        return done;
    }

    @FunctionalInterface
    private interface Body {
        void run(int seq) throws Exception;
    }

    /**
     * Runs the scenario in this JVM and prints {@code RESULT children messages bytes writes mechanism}.
     *
     * @param args minimum children, messages and writes
     * @throws IOException never in practice
     */
    public static void main(String[] args) throws IOException {
        int status = 1;
        try {
            Result r = run(Integer.parseInt(args[0]), Integer.parseInt(args[1]), Integer.parseInt(args[2]),
                    Duration.ofSeconds(Long.parseLong(args[3])));
            System.out.println("RESULT " + r.children() + " " + r.messages() + " " + r.messageBytes() + " " + r.writes()
                    + " " + System.getProperty("jdk.lang.Process.launchMechanism", "default"));
            status = 0;
        } catch (Throwable t) {
            t.printStackTrace();
        }
        System.out.flush();
        // The shared loops' threads would keep the JVM up.
        System.exit(status);
    }
}
