package rdmaflux.samples.rc;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import rdmaflux.samples.devinfo.GidText;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.Mtu;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.PortState;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WorkCompletions;

/**
 * The classic reliable-connection example (the flow of rdma-core's {@code rc_pingpong}) on the verbs
 * layer alone: no connection manager. The two sides exchange their QP number, PSN, GID and a buffer
 * descriptor as one text line over a TCP socket ({@link Destination}), move their QPs RESET → INIT →
 * RTR → RTS by hand, then run three checks, each verified by the receiving side:
 * <ol>
 *   <li>SEND ping-pong: the client sends, the server checks and echoes, the client checks the echo;</li>
 *   <li>RDMA WRITE: the client writes into the server's buffer, the server checks it;</li>
 *   <li>RDMA READ: the server fills its buffer, the client reads it and checks it.</li>
 * </ol>
 * Like rc_pingpong, it is the server without a host argument and the client with one.
 *
 * <p>On the Soft-RoCE sandbox (both sides in one VM, one address), from the project root after
 * {@code ./mvnw -q install -DskipTests}:
 * <pre>{@code
 * scripts/sandbox/run -- sh -c 'CP=samples/target/classes:$(cat samples/target/runtime-classpath.txt);
 *     J="$JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -cp $CP rdmaflux.samples.rc.RcExample";
 *     $J -n 10 & $J -n 10 192.0.2.1; wait'
 * }</pre>
 */
@Command(name = "rc-example", mixinStandardHelpOptions = true,
        description = "RC QP set up by hand over a TCP exchange (like rc_pingpong): SEND, RDMA WRITE, RDMA READ.")
public final class RcExample implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public RcExample() {
    }

    private static final long SEND_ID = 1;
    private static final long RECV_ID = 2;
    private static final long WRITE_ID = 4;
    private static final long READ_ID = 8;

    @Spec
    CommandSpec spec;

    @Parameters(arity = "0..1", paramLabel = "SERVER",
            description = "Server host to connect to over TCP; without it this side is the server.")
    String serverHost;

    @Option(names = {"-p", "--port"}, description = "TCP port of the exchange (default: ${DEFAULT-VALUE}).")
    int port = 18515;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEVICE",
            description = "RDMA device (default: $RDMAFLUX_SANDBOX_DEVICE, else the first one).")
    String device;

    @Option(names = {"-i", "--ib-port"}, description = "Port of the device (default: ${DEFAULT-VALUE}).")
    int ibPort = 1;

    @Option(names = {"-g", "--gid-idx"}, description = "Local GID index (default: the IPv4-mapped GID on RoCE, "
            + "else 0).")
    int gidIndex = -1;

    @Option(names = {"-s", "--size"}, description = "Message and buffer size in bytes (default: ${DEFAULT-VALUE}).")
    int size = 4096;

    @Option(names = {"-n", "--iters"}, description = "SEND round trips (default: ${DEFAULT-VALUE}).")
    int iters = 100;

    @Option(names = {"-m", "--mtu"}, description = "Largest path MTU: 256..4096 (default: ${DEFAULT-VALUE}).")
    int mtu = 1024;

    @Option(names = "--wait", description = "Seconds the client keeps retrying the TCP connect, and the longest "
            + "wait for any completion (default: ${DEFAULT-VALUE}).")
    int waitSeconds = 30;

    private PrintWriter out;
    private String who;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RcExample()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        who = serverHost == null ? "server" : "client";
        if (!Rdma.isAvailable()) {
            err.println(who + ": RDMA is not available: " + Rdma.unavailabilityCause().getMessage());
            err.flush();
            return 2;
        }
        if (size < 8 || iters < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--size must be >= 8 and --iters >= 1");
        }
        Mtu pathMtu = switch (mtu) {
            case 256 -> Mtu.MTU_256;
            case 512 -> Mtu.MTU_512;
            case 1024 -> Mtu.MTU_1024;
            case 2048 -> Mtu.MTU_2048;
            case 4096 -> Mtu.MTU_4096;
            default -> throw new CommandLine.ParameterException(spec.commandLine(), "--mtu must be 256..4096");
        };
        String dev = device != null ? device : System.getenv().getOrDefault("RDMAFLUX_SANDBOX_DEVICE",
                Rdma.devices().stream().map(RdmaDevice::name).findFirst().orElse("none"));
        try (RdmaContext ctx = Rdma.open(dev); Arena arena = Arena.ofShared()) {
            PortAttributes portAttr = ctx.queryPort(ibPort);
            if (portAttr.state() != PortState.ACTIVE) {
                say("warning: %s port %d is %s, not ACTIVE", dev, ibPort, portAttr.state());
            }
            int gid = gidIndex >= 0 ? gidIndex : defaultGidIndex(ctx, portAttr);
            QpConnectOptions opts = QpConnectOptions.builder().port(ibPort).gidIndex(gid).mtu(pathMtu).build();
            Side side = new Side(ctx, arena, size, Duration.ofSeconds(waitSeconds));
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            Destination mine = new Destination(side.qp.localEndpoint(opts, psn),
                    side.mr.toRemoteBuffer().slice(2L * size, size));
            try (Socket socket = serverHost == null ? accept() : connect()) {
                BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                        StandardCharsets.US_ASCII));
                PrintWriter tcp = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.US_ASCII);
                Destination peer = exchange(mine, in, tcp);
                say("local  address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", mine.endpoint().lid(),
                        mine.endpoint().qpNumber(), mine.endpoint().psn(), GidText.of(mine.endpoint().gid()));
                say("remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", peer.endpoint().lid(),
                        peer.endpoint().qpNumber(), peer.endpoint().psn(), GidText.of(peer.endpoint().gid()));
                side.bringUp(peer, psn, opts);
                // Both QPs are in RTS before anyone sends; the RNR retry would cover it, but this is the example.
                tcp.println("RTS");
                expectLine(in, "RTS");
                boolean ok = serverHost == null ? serve(side, peer, in, tcp) : drive(side, peer, in, tcp);
                say(ok ? "done" : "FAILED");
                return ok ? 0 : 1;
            }
        } finally {
            out.flush();
        }
    }

    /** On RoCE the IPv4-mapped GID is the RoCE v2 address of the interface: routable, unlike fe80::. */
    private int defaultGidIndex(RdmaContext ctx, PortAttributes portAttr) {
        if (!portAttr.isEthernet()) {
            return 0;
        }
        for (RdmaContext.IndexedGid g : ctx.gidTable(ibPort)) {
            byte[] b = g.gid().toBytes();
            boolean mapped = b[10] == (byte) 0xff && b[11] == (byte) 0xff;
            for (int i = 0; i < 10 && mapped; i++) {
                mapped = b[i] == 0;
            }
            if (mapped) {
                return g.index();
            }
        }
        return 0;
    }

    private Socket accept() throws IOException {
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(port));
            say("waiting for a client on TCP port %d", listener.getLocalPort());
            Socket s = listener.accept();
            say("TCP connection from %s", s.getRemoteSocketAddress());
            return s;
        }
    }

    private Socket connect() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(waitSeconds).toNanos();
        for (;;) {
            try {
                Socket s = new Socket();
                s.connect(new InetSocketAddress(serverHost, port), 5000);
                say("TCP connection to %s", s.getRemoteSocketAddress());
                return s;
            } catch (ConnectException e) {
                // The server may still be starting (e.g. both sides launched together).
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    /** The client speaks first, as in rc_pingpong. */
    private Destination exchange(Destination mine, BufferedReader in, PrintWriter tcp) throws IOException {
        if (serverHost != null) {
            tcp.println(mine.toWire());
        }
        String line = in.readLine();
        if (line == null) {
            throw new IOException("the peer closed the TCP connection before sending its address");
        }
        Destination peer = Destination.parse(line);
        if (serverHost == null) {
            tcp.println(mine.toWire());
        }
        return peer;
    }

    private boolean drive(Side side, Destination peer, BufferedReader in, PrintWriter tcp) throws IOException {
        // 1. SEND ping-pong
        long start = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            fill(side.buffer, 0, size, i);
            side.postSend(SEND_ID, SendOpcode.SEND, 0, 0, 0);
            side.await(SEND_ID | RECV_ID);
            if (!check(side.buffer, size, size, i)) {
                say("SEND round trip %d: the echo carried the wrong data", i);
                return false;
            }
            side.postReceive();
        }
        long rtt = (System.nanoTime() - start) / iters;
        say("%d SEND round trips of %d bytes verified, %.1f us per round trip", iters, size, rtt / 1e3);

        // 2. RDMA WRITE into the server's buffer; the server checks it.
        int writeSeed = 1_000_003;
        fill(side.buffer, 0, size, writeSeed);
        side.postSend(WRITE_ID, SendOpcode.RDMA_WRITE, 0, peer.buffer().address(), peer.buffer().rkey());
        side.await(WRITE_ID);
        tcp.println("WRITE " + writeSeed);
        String verdict = in.readLine();
        if (!"WRITE_OK".equals(verdict)) {
            say("RDMA WRITE of %d bytes: the server answered %s", size, verdict);
            return false;
        }
        say("RDMA WRITE of %d bytes verified by the server", size);

        // 3. RDMA READ of what the server put in its buffer.
        String[] ready = expectLine(in, "READ").split(" ");
        int readSeed = Integer.parseInt(ready[1]);
        side.buffer.asSlice(size, size).fill((byte) 0);
        side.postSend(READ_ID, SendOpcode.RDMA_READ, size, peer.buffer().address(), peer.buffer().rkey());
        side.await(READ_ID);
        boolean readOk = check(side.buffer, size, size, readSeed);
        tcp.println(readOk ? "READ_OK" : "READ_BAD");
        say(readOk ? "RDMA READ of %d bytes verified" : "RDMA READ of %d bytes returned the wrong data", size);
        return readOk;
    }

    private boolean serve(Side side, Destination peer, BufferedReader in, PrintWriter tcp) throws IOException {
        for (int i = 0; i < iters; i++) {
            side.await(RECV_ID);
            if (!check(side.buffer, size, size, i)) {
                say("SEND %d arrived with the wrong data", i);
                return false;
            }
            side.postReceive();
            MemorySegment.copy(side.buffer, size, side.buffer, 0, size);
            side.postSend(SEND_ID, SendOpcode.SEND, 0, 0, 0);
            side.await(SEND_ID);
        }
        say("%d SENDs of %d bytes received, verified and echoed", iters, size);

        int writeSeed = Integer.parseInt(expectLine(in, "WRITE").split(" ")[1]);
        boolean writeOk = check(side.buffer, 2L * size, size, writeSeed);
        tcp.println(writeOk ? "WRITE_OK" : "WRITE_BAD");
        say(writeOk ? "RDMA WRITE of %d bytes from the client verified"
                : "RDMA WRITE of %d bytes from the client: wrong data", size);
        if (!writeOk) {
            return false;
        }

        int readSeed = 2_000_029;
        fill(side.buffer, 2L * size, size, readSeed);
        tcp.println("READ " + readSeed);
        String verdict = in.readLine();
        say("RDMA READ of %d bytes by the client: %s", size, verdict);
        return "READ_OK".equals(verdict);
    }

    private static String expectLine(BufferedReader in, String prefix) throws IOException {
        String line = in.readLine();
        if (line == null || !line.startsWith(prefix)) {
            throw new IOException("expected '" + prefix + "' from the peer, got " + (line == null ? "EOF" : line));
        }
        return line;
    }

    /** Deterministic bytes both sides can compute from a seed, so a check needs no copy of the data. */
    private static byte pattern(int seed, long j) {
        return (byte) (seed * 131 + j * 7 + (j >>> 8));
    }

    private static void fill(MemorySegment buf, long offset, int length, int seed) {
        for (long j = 0; j < length; j++) {
            buf.set(ValueLayout.JAVA_BYTE, offset + j, pattern(seed, j));
        }
    }

    private static boolean check(MemorySegment buf, long offset, int length, int seed) {
        for (long j = 0; j < length; j++) {
            if (buf.get(ValueLayout.JAVA_BYTE, offset + j) != pattern(seed, j)) {
                return false;
            }
        }
        return true;
    }

    private void say(String format, Object... args) {
        out.println(who + ": " + String.format(format, args));
        out.flush();
    }

    /**
     * One side's verbs objects. The registered buffer has three parts of {@code size} bytes: what this
     * side sends or writes from, where receives and reads land, and the part the peer may read and write.
     */
    private final class Side {
        final QueuePair qp;
        final CompletionQueue cq;
        final MemorySegment buffer;
        final MemoryRegion mr;
        final SendRequests send = new SendRequests(1, 1);
        final ReceiveRequests recv = new ReceiveRequests(1, 1);
        final WorkCompletions wc = new WorkCompletions(8);
        /** Ids whose completion was polled but not yet awaited; one request per id is in flight at a time. */
        private long completed;
        final Duration wait;
        final int size;

        Side(RdmaContext ctx, Arena arena, int size, Duration wait) {
            this.size = size;
            this.wait = wait;
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            cq = ctx.createCompletionQueue(32, null, 0);
            qp = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).depth(8, 8).build());
            buffer = arena.allocate(3L * size, 4096);
            mr = pd.register(buffer, AccessFlags.REMOTE_ALL);
            recv.set(0, RECV_ID).sge(0, 0, mr, size, size);
        }

        /** RESET → INIT → RTR → RTS, one step at a time, as the state machine of the verbs spec requires. */
        void bringUp(Destination peer, int psn, QpConnectOptions opts) {
            StringBuilder states = new StringBuilder(qp.state().name());
            qp.modifyToInit(opts);
            states.append(" -> ").append(qp.state());
            // A receive must be posted before the peer's first SEND can land; INIT is the earliest state allowed.
            postReceive();
            qp.modifyToRtr(peer.endpoint(), opts);
            states.append(" -> ").append(qp.state());
            qp.modifyToRts(psn, opts);
            states.append(" -> ").append(qp.state());
            say("QP 0x%06x: %s (path MTU %d, GID index %d)", qp.number(), states,
                    Math.min(peer.endpoint().mtu().bytes(), opts.mtu().bytes()), opts.gidIndex());
        }

        void postReceive() {
            qp.postReceive(recv, 1);
        }

        /** Sends from, or reads into, this side's first or second part. */
        void postSend(long wrId, SendOpcode opcode, long localOffset, long remoteAddress, int rkey) {
            send.set(0, wrId, opcode, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, mr, localOffset, size);
            if (opcode != SendOpcode.SEND) {
                send.rdma(0, remoteAddress, rkey);
            }
            qp.postSend(send, 1);
        }

        /**
         * Busy-polls until a successful completion of every work request id in {@code mask} arrived.
         * Completions of other ids polled meanwhile are kept for a later call: the server waiting for
         * its echo's SEND completion can already see the client's next RECV (the ACK of the echo may
         * come after the client's next message), and forgetting it would wait for it forever.
         */
        void await(long mask) {
            long deadline = System.nanoTime() + wait.toNanos();
            while ((completed & mask) != mask) {
                int n = cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    if (!wc.isSuccess(i)) {
                        throw new IllegalStateException("work request failed: " + wc.describe(i));
                    }
                    completed |= wc.wrId(i);
                }
                if (n == 0 && System.nanoTime() > deadline) {
                    throw new IllegalStateException("no completion for work requests " + Long.toBinaryString(mask)
                            + " within " + wait);
                }
            }
            completed &= ~mask;
        }
    }
}
