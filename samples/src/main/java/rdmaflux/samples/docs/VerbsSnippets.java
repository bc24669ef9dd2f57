package rdmaflux.samples.docs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.DeviceAttributes;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.ExtendedSendQueue;
import rdmaflux.verbs.GidEntry;
import rdmaflux.verbs.GidType;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.MemoryWindow;
import rdmaflux.verbs.MemoryWindowType;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpConnectOptions;
import rdmaflux.verbs.QpEndpoint;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WcOpcode;
import rdmaflux.verbs.WorkCompletions;

/**
 * The verbs layer's examples in README.md, docs/verbs.md and docs/getting-started.md. Every method runs
 * on the calling thread; {@code DocSnippetsIT} runs each on real RDMA.
 */
public final class VerbsSnippets {
    private VerbsSnippets() {
    }

    /**
     * docs/getting-started.md: is RDMA usable here?
     *
     * @return whether it is
     */
    public static boolean availabilityCheck() {
        // tag::availability-check[]
        if (!Rdma.isAvailable()) {
            System.err.println(Rdma.unavailabilityCause().getMessage()); // says how to fix it
        }
        // end::availability-check[]
        return Rdma.isAvailable();
    }

    /**
     * docs/verbs.md: log why RDMA is not usable, or fail fast.
     *
     * @throws rdmaflux.verbs.RdmaUnavailableException when RDMA is not usable
     */
    public static void availability() {
        // tag::availability[]
        System.Logger log = System.getLogger("com.example.app");
        if (!Rdma.isAvailable()) {
            log.log(System.Logger.Level.WARNING, "RDMA disabled", Rdma.unavailabilityCause()); // says how to fix it
        }
        Rdma.ensureAvailable();                                      // or fail fast
        // end::availability[]
    }

    /**
     * docs/verbs.md: devices, their first port and its RoCE v2 GIDs.
     *
     * @return one line per RoCE v2 GID of each device's port 1
     */
    public static List<String> devices() {
        List<String> lines = new ArrayList<>();
        // tag::devices[]
        for (RdmaDevice d : Rdma.devices()) {                 // name, node GUID, NodeType, Transport
            try (RdmaContext ctx = d.open()) {
                DeviceAttributes dev = ctx.queryDevice();     // ibv_query_device, copied into a record
                PortAttributes port = ctx.queryPort(1);       // ibv_query_port, all of it
                for (GidEntry g : ctx.queryGidTable(1)) {     // used entries: index, Gid, GidType, netdev
                    if (g.type() == GidType.ROCE_V2) {
                        lines.add(d.name() + " fw " + dev.firmwareVersion() + " port 1 " + port.state()
                                + " mtu " + port.activeMtu() + " gid[" + g.index() + "] " + g.gid());
                    }
                }
            }
        }
        // end::devices[]
        return lines;
    }

    /** What {@link #dataPath} hands each completion to. */
    @FunctionalInterface
    public interface CompletionHandler {
        /**
         * One successful completion.
         *
         * @param wrId the work request's id
         * @param opcode what completed
         * @param byteLength bytes received (receives only)
         */
        void handle(long wrId, WcOpcode opcode, int byteLength);
    }

    /**
     * docs/verbs.md: one RDMA WRITE of 4 KiB from a pre-allocated batch, and its completion.
     *
     * @param qp a connected RC queue pair
     * @param cq its send completion queue
     * @param localMr registered memory of at least 4 KiB
     * @param remote the peer's memory (remote write access)
     * @param wrId the work request id
     * @param handler gets each successful completion
     */
    public static void dataPath(QueuePair qp, CompletionQueue cq, MemoryRegion localMr, RemoteBuffer remote,
                                long wrId, CompletionHandler handler) {
        // tag::data-path[]
        SendRequests send = new SendRequests(16, 2);          // 16 requests, 2 SGEs each
        send.set(0, wrId, SendOpcode.RDMA_WRITE, SendFlag.mask(SendFlag.SIGNALED))
            .sge(0, 0, localMr, 0, 4096)
            .rdma(0, remote.address(), remote.rkey());
        qp.postSend(send, 1);

        WorkCompletions wc = new WorkCompletions(32);         // one per polling thread
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        int n;
        while ((n = cq.poll(wc)) == 0) {                      // or wait on a CompletionChannel
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no completion within 10 s");
            }
            Thread.onSpinWait();
        }
        for (int i = 0; i < n; i++) {
            if (!wc.isSuccess(i)) {
                throw new IllegalStateException(wc.describe(i));   // wc.status(i): REM_ACCESS_ERR, ...
            }
            handler.handle(wc.wrId(i), wc.opcode(i), wc.byteLength(i));
        }
        // end::data-path[]
    }

    /**
     * docs/verbs.md: an RDMA WRITE and a SEND with immediate data in one batch of the extended post API.
     *
     * @param qp a connected RC QP made by {@code ProtectionDomain.createExtendedQueuePair} with at least
     *     {@code RDMA_WRITE} and {@code SEND_WITH_IMM}
     * @param mr registered memory of at least 4 KiB + 8 bytes
     * @param remote the peer's memory (remote write access); the peer has a receive posted
     */
    public static void extendedPost(QueuePair qp, MemoryRegion mr, RemoteBuffer remote) {
        // tag::extended-post[]
        ExtendedSendQueue sq = qp.extendedSendQueue();       // qp from pd.createExtendedQueuePair(attrs, ops)
        sq.start();
        sq.wrId(1).flags(SendFlag.mask(SendFlag.SIGNALED)).rdmaWrite(remote.rkey(), remote.address()).sge(mr, 0, 4096);
        sq.wrId(2).flags(SendFlag.mask(SendFlag.SIGNALED)).sendWithImm(42).sge(mr, 4096, 8);
        sq.complete();                                       // posts both, or throws and posts none
        // end::extended-post[]
    }

    /**
     * docs/verbs.md: grants a peer read access to the first 4 KiB of a region through a type-2 memory window.
     *
     * @param pd the protection domain of {@code qp}
     * @param qp the connected RC QP the peer reads through
     * @param memory native memory of at least 4 KiB
     * @return what to send the peer, valid once the bind's completion (wrId 1) arrived
     */
    public static RemoteBuffer grantWindow(ProtectionDomain pd, QueuePair qp, MemorySegment memory) {
        // tag::memory-window-grant[]
        MemoryRegion mr = pd.register(memory, AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.MW_BIND));
        MemoryWindow window = pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
        SendRequests bind = new SendRequests(1, 1);
        bind.set(0, 1, SendOpcode.BIND_MW, SendFlag.mask(SendFlag.SIGNALED));
        RemoteBuffer grant = bind.bindWindow(0, window, mr, 0, 4096, AccessFlags.of(AccessFlag.REMOTE_READ));
        qp.postSend(bind, 1);                                // the peer may read once the bind completed
        // end::memory-window-grant[]
        return grant;
    }

    /**
     * docs/verbs.md: revokes a window's grant ({@code LOCAL_INV} on the QP that bound it); the region stays.
     *
     * @param qp the QP that bound the window
     * @param grant what {@link #grantWindow} returned
     */
    public static void revokeWindow(QueuePair qp, RemoteBuffer grant) {
        // tag::memory-window-revoke[]
        SendRequests revoke = new SendRequests(1, 1);
        revoke.set(0, 2, SendOpcode.LOCAL_INV, SendFlag.mask(SendFlag.SIGNALED)).invalidate(0, grant.rkey());
        qp.postSend(revoke, 1);                              // from its completion on, grant.rkey() is dead
        // end::memory-window-revoke[]
    }

    /**
     * docs/verbs.md: connect a queue pair through an out-of-band exchange of endpoints.
     *
     * @param qp a queue pair in RESET
     * @param myPsn this side's first packet sequence number
     * @param exchange sends this side's endpoint to the peer and returns the peer's
     */
    public static void connect(QueuePair qp, int myPsn, UnaryOperator<QpEndpoint> exchange) {
        // tag::connect[]
        QpConnectOptions opts = QpConnectOptions.builder().gidIndex(1).rnrRetry(7).build();
        QpEndpoint mine = qp.localEndpoint(opts, myPsn);
        QpEndpoint theirs = exchange.apply(mine);             // e.g. over TCP: writeTo / readFrom
        qp.connect(theirs, myPsn, opts);
        // end::connect[]
    }

    /**
     * docs/verbs.md: a client with the synchronous connection manager.
     *
     * @param server the server's address and port (a listening RDMA CM id that accepts)
     * @return the events, in order (an entry is null when its event did not come in time)
     */
    public static List<CmEvent> connectionManager(InetSocketAddress server) {
        List<CmEvent> events = new ArrayList<>();
        // tag::cm[]
        Duration step = Duration.ofSeconds(5);
        try (EventChannel ch = EventChannel.create()) {                // closes its ids and what they own
            CmId id = ch.createId(PortSpace.TCP);
            id.resolveAddress(null, server, step);
            events.add(ch.awaitEvent(step));                           // ADDR_RESOLVED (null after the timeout)
            id.resolveRoute(step);
            events.add(ch.awaitEvent(step));                           // ROUTE_RESOLVED
            ProtectionDomain pd = id.context().allocateProtectionDomain();
            CompletionQueue cq = id.context().createCompletionQueue(64, null, 0);
            QueuePair qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cq).build());
            id.connect(ConnectionParameters.DEFAULTS.withPrivateData("hi".getBytes(StandardCharsets.UTF_8)));
            events.add(ch.awaitEvent(step));                           // ESTABLISHED (or REJECTED, ...)
            id.disconnect();
            events.add(ch.awaitEvent(step));                           // DISCONNECTED, once the peer answers
        }
        // end::cm[]
        return events;
    }

    /**
     * README.md: an RC queue pair connected by hand, one SEND and its completion.
     *
     * @param device the RDMA device's name (e.g. rxe0)
     * @param exchange sends this side's endpoint to the peer (out of band) and returns the peer's; the
     *                 peer must have a receive posted for the SEND
     * @return the completion, as rdma-core describes it
     */
    public static String readme(String device, UnaryOperator<QpEndpoint> exchange) {
        // tag::readme[]
        // Resources close in reverse order: the context (with its QP and memory registration) before
        // the arena, so no registration ever points at freed memory.
        try (Arena arena = Arena.ofConfined();
             RdmaContext ctx = Rdma.open(device)) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(64, null, 0);
            QueuePair qp = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).build());
            MemoryRegion mr = pd.register(arena.allocate(4096), AccessFlags.LOCAL_WRITE);
            mr.segment().setString(0, "hello over RC", StandardCharsets.UTF_8);

            // Exchange endpoints out of band (e.g. over TCP), then RESET -> INIT -> RTR -> RTS:
            QpEndpoint mine = qp.localEndpoint(QpConnectOptions.DEFAULTS, 0x1234);
            QpEndpoint peer = exchange.apply(mine);
            qp.connect(peer, 0x1234, QpConnectOptions.DEFAULTS);

            SendRequests send = new SendRequests(1, 1);     // reused for every message
            send.set(0, 1, SendOpcode.SEND, SendFlag.mask(SendFlag.SIGNALED)).sge(0, 0, mr, 0, 64);
            qp.postSend(send, 1);
            WorkCompletions wc = new WorkCompletions(16);   // reused for every poll
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no completion within 10 s");
                }
                Thread.onSpinWait();
            }
            System.out.println(wc.describe(0));
            return wc.describe(0);
        }
        // end::readme[]
    }
}
