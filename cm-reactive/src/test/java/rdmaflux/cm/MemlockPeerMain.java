package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;

/**
 * Test fixture: the client of {@link MemlockIT}, run in a JVM whose locked-memory limit is small and that
 * lacks CAP_IPC_LOCK. Against the test's echo server it sets up connection A, then makes four registrations
 * that pass the limit (a direct one, a large send's copy, a connection's receive buffers, a large received
 * message's region) and checks that A still echoes after each. It prints one line per step
 * ({@code STEP name ok} or {@code STEP name error <class> <message>}) for the test to assert, and
 * {@code DONE} at the end; it exits 0 unless something other than a step failed.
 */
public final class MemlockPeerMain {
    /** A step's bound: setups and echoes under emulation, nothing that waits for a timeout. */
    private static final Duration T = rdmaflux.testing.RdmaTestEnv.scaled(Duration.ofSeconds(90));
    private static final int MIB = 1 << 20;
    /** Far above the test's 32 MiB limit: refused whatever else is pinned. */
    static final long TOO_MUCH = 48L * MIB;
    /** Below the limit alone, above it together with a second one of its size. */
    static final long HALF = 20L * MIB;

    private MemlockPeerMain() {
    }

    /**
     * @param args the echo server's address and port
     * @throws Exception anything but a step's expected failure: the test then sees a non-zero exit
     */
    public static void main(String[] args) throws Exception {
        InetSocketAddress server = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        // What the test set up, as this process sees it: the limit and whether CAP_IPC_LOCK is gone.
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("CapEff:") || line.startsWith("VmPin:")) {
                System.out.println("STATUS " + line.replace('\t', ' '));
            }
        }
        try (Arena arena = Arena.ofShared()) {
            // The test peers' connect and accept timeouts: a slow machine's CM exchange can pass the default.
            RdmaConnection a = RdmaConnection.connect(server, PeerMain.OPTIONS).block(T);
            LinkedBlockingQueue<Object> echoes = new LinkedBlockingQueue<>();
            a.receiveBytes().subscribe(echoes::add, echoes::add);
            echo(a, echoes, 0);
            System.out.println("STEP before ok");

            step("register", () -> a.register(arena.allocate(TOO_MUCH, 4096), AccessFlags.LOCAL_WRITE));
            echo(a, echoes, 100);

            // From the heap: the sender copies it into memory it registers for the peer's READ.
            step("send", () -> a.send(ByteBuffer.allocate((int) TOO_MUCH)).block(T));
            echo(a, echoes, 200);

            ConnectionOptions big = PeerMain.OPTIONS.toBuilder().bufferSize(MIB).receiveBuffers(48).build();
            step("connect", () -> RdmaConnection.connect(server, big).block(T).disposeNow(T));
            echo(a, echoes, 300);

            // Connection B sends HALF from memory registered for the peer's READ (nothing new to pin), and the
            // server echoes it: B's region for the echo would be a second HALF, past the limit.
            RdmaConnection b = RdmaConnection.connect(server, PeerMain.OPTIONS).block(T);
            LinkedBlockingQueue<Object> bEchoes = new LinkedBlockingQueue<>();
            b.receiveBytes().subscribe(bEchoes::add, bEchoes::add);
            MemorySegment half = ChecksumServer.payload(arena, 1, HALF);
            RegisteredBuffer readable = b.register(half, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
            b.send(readable).block(T);
            step("receive", () -> {
                Object got = bEchoes.poll(T.toSeconds(), TimeUnit.SECONDS);
                if (got instanceof Throwable t) {
                    throw t;
                }
                throw new AssertionError("B received " + (got == null ? "nothing" : "a message") + " instead of failing");
            });
            readable.close();
            b.onDispose().onErrorComplete().block(T);
            echo(a, echoes, 400);
            System.out.println("STEP after ok");
            a.disposeNow(T);
        }
        System.out.println("DONE");
    }

    /** A step that should fail: prints how it failed, or that it did not. */
    private static void step(String name, ThrowingRunnable r) {
        try {
            r.run();
            System.out.println("STEP " + name + " ok");
        } catch (Throwable t) {
            System.out.println("STEP " + name + " error " + t.getClass().getName() + " "
                    + String.valueOf(t.getMessage()).replace('\n', ' '));
        }
    }

    /** Eight 1 KiB messages echoed by the server and checked byte by byte: A still works. */
    private static void echo(RdmaConnection a, LinkedBlockingQueue<Object> echoes, int first) throws InterruptedException {
        for (int seq = first; seq < first + 8; seq++) {
            a.send(Payloads.message(seq, 1024)).block(T);
            Object got = echoes.poll(T.toSeconds(), TimeUnit.SECONDS);
            if (!(got instanceof byte[] data)) {
                throw new AssertionError("connection A: echo " + seq + " is " + got, got instanceof Throwable t ? t : null);
            }
            Payloads.verify(data, seq, 1024);
        }
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Throwable;
    }
}
