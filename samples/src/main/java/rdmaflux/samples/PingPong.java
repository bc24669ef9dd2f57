package rdmaflux.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WorkCompletions;

/**
 * Send/receive ping-pong on the verbs layer: a client and a server connect over RDMA with the
 * synchronous connection manager and bounce a message back and forth, printing each round trip. Both
 * run in this process (two threads) unless {@code --server} or {@code --client} picks one side. Not
 * the demo ({@link Demo}, the reactive API).
 */
@Command(name = "ping-pong", mixinStandardHelpOptions = true,
        description = "RC send/receive ping-pong over RDMA (verbs layer + synchronous connection manager).")
public final class PingPong implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public PingPong() {
    }

    private static final Duration STEP = Duration.ofSeconds(15);

    @Option(names = {"-a", "--address"}, description = "IP address of the RDMA interface (server side). "
            + "Default: $RDMAFLUX_SANDBOX_ADDR, else the address of the first active RDMA port.")
    String address = "";

    @Option(names = {"-p", "--port"}, description = "RDMA CM port (default: ${DEFAULT-VALUE}).")
    int port = 7471;

    @Option(names = {"-C", "--count"}, description = "Round trips (default: ${DEFAULT-VALUE}).")
    int count = 10;

    @Option(names = {"-S", "--size"}, description = "Message size in bytes (default: ${DEFAULT-VALUE}).")
    int size = 64;

    @Option(names = "--server", description = "Run only the server.")
    boolean serverOnly;

    @Option(names = "--client", description = "Run only the client.")
    boolean clientOnly;

    /**
     * Runs the sample.
     *
     * @param args command line
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new PingPong()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        address = Samples.address("ping-pong", address);
        if (address == null) {
            return Samples.CANNOT_RUN;
        }
        InetSocketAddress addr = new InetSocketAddress(InetAddress.getByName(address), port);
        if (serverOnly) {
            serve(addr, new CountDownLatch(1));
            return 0;
        }
        if (clientOnly) {
            return ping(addr);
        }
        CountDownLatch listening = new CountDownLatch(1);
        CompletableFuture<Void> server = CompletableFuture.runAsync(() -> serve(addr, listening));
        listening.await();
        int rc = ping(addr);
        server.get();
        return rc;
    }

    /** One side's QP, CQ and a registered buffer of two halves: [0,size) to send, [size,2size) to receive. */
    private record Endpoint(QueuePair qp, CompletionQueue cq, MemorySegment buf, MemoryRegion mr,
                            SendRequests send, ReceiveRequests recv, WorkCompletions wc, boolean[] done) {

        static Endpoint create(CmId id, Arena arena, int size) {
            ProtectionDomain pd = id.context().allocateProtectionDomain();
            CompletionQueue cq = id.context().createCompletionQueue(16, null, 0);
            QueuePair qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                    .depth(4, 4).build());
            MemorySegment buf = arena.allocate(2L * size, 64);
            MemoryRegion mr = pd.register(buf);
            Endpoint e = new Endpoint(qp, cq, buf, mr, new SendRequests(1, 1), new ReceiveRequests(1, 1),
                    new WorkCompletions(4), new boolean[3]);
            e.send.set(0, 1, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, mr, 0, size);
            e.recv.set(0, 2).sge(0, 0, mr, size, size);
            return e;
        }

        void postReceive() {
            qp.postReceive(recv, 1);
        }

        void postSend() {
            qp.postSend(send, 1);
        }

        /**
         * Busy-polls until the completion of work request {@code wrId} (1 = send, 2 = receive) has
         * arrived. One poll can return both; the other one is remembered, not dropped.
         */
        void await(long wrId) {
            long deadline = System.nanoTime() + STEP.toNanos();
            while (!done[(int) wrId] && System.nanoTime() < deadline) {
                int n = cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    if (!wc.isSuccess(i)) {
                        throw new IllegalStateException("completion failed: " + wc.describe(i));
                    }
                    done[(int) wc.wrId(i)] = true;
                }
            }
            if (!done[(int) wrId]) {
                throw new IllegalStateException("no completion within " + STEP);
            }
            done[(int) wrId] = false;
        }
    }

    private static CmEvent expect(EventChannel ch, CmEventType type) {
        CmEvent e = ch.awaitEvent(STEP);
        if (e == null || e.type() != type) {
            throw new IllegalStateException("expected " + type + ", got " + (e == null ? "nothing" : e));
        }
        return e;
    }

    private void serve(InetSocketAddress addr, CountDownLatch listening) {
        try (Arena arena = Arena.ofShared(); EventChannel ch = EventChannel.create()) { // the channel (and its MRs) closes first
            CmId listener = ch.createId(PortSpace.TCP);
            listener.setReuseAddress(true);
            listener.bind(addr);
            listener.listen(1);
            System.out.println("server: listening on " + listener.localAddress());
            listening.countDown();
            CmId conn = expect(ch, CmEventType.CONNECT_REQUEST).id();
            Endpoint e = Endpoint.create(conn, arena, size);
            e.postReceive();
            conn.accept(ConnectionParameters.DEFAULTS);
            expect(ch, CmEventType.ESTABLISHED);
            System.out.println("server: connection from " + conn.peerAddress());
            for (int i = 0; i < count; i++) {
                e.await(2);
                MemorySegment.copy(e.buf, size, e.buf, 0, size);
                e.postReceive();
                e.postSend();
                e.await(1);
            }
            expect(ch, CmEventType.DISCONNECTED);
            conn.disconnect(); // answers the client's DREQ, which completes its disconnect
            System.out.println("server: done");
        } finally {
            listening.countDown();
        }
    }

    private int ping(InetSocketAddress addr) {
        try (Arena arena = Arena.ofShared(); EventChannel ch = EventChannel.create()) { // the channel (and its MRs) closes first
            CmId id = ch.createId(PortSpace.TCP);
            long t0 = System.nanoTime();
            id.resolveAddress(null, addr, STEP);
            expect(ch, CmEventType.ADDR_RESOLVED);
            id.resolveRoute(STEP);
            expect(ch, CmEventType.ROUTE_RESOLVED);
            Endpoint e = Endpoint.create(id, arena, size);
            id.connect(ConnectionParameters.DEFAULTS);
            expect(ch, CmEventType.ESTABLISHED);
            System.out.printf("client: connected to %s on %s in %.1f ms%n", addr, id.context().deviceName(),
                    (System.nanoTime() - t0) / 1e6);
            long[] rtts = new long[count];
            for (int i = 0; i < count; i++) {
                e.buf.asSlice(0, size).fill((byte) ('A' + i % 26));
                e.buf.set(ValueLayout.JAVA_INT_UNALIGNED, 0, i);
                e.postReceive();
                long start = System.nanoTime();
                e.postSend();
                e.await(1);
                e.await(2);
                rtts[i] = System.nanoTime() - start;
                if (e.buf.get(ValueLayout.JAVA_INT_UNALIGNED, size) != i
                        || e.buf.get(ValueLayout.JAVA_BYTE, 2L * size - 1) != (byte) ('A' + i % 26)) {
                    System.err.println("client: pong " + i + " carried the wrong data");
                    return 1;
                }
                System.out.printf("client: ping %d: %d bytes, round trip %.1f us%n", i, size, rtts[i] / 1e3);
            }
            id.disconnect();
            expect(ch, CmEventType.DISCONNECTED);
            Arrays.sort(rtts);
            System.out.printf("client: %d round trips verified, median %.1f us%n", count, rtts[count / 2] / 1e3);
            return 0;
        }
    }
}
