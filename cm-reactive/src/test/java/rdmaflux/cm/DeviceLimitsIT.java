package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import rdmaflux.testing.RcPair;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.DeviceAttributes;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaException;
import rdmaflux.verbs.RdmaResourceException;

/**
 * Device limits (issue #43): the connection or registration that hits a limit fails with an
 * {@link RdmaResourceException} naming the limit and what to do, an established connection keeps echoing, and
 * once the limit is lifted new connections work. The device's table of memory regions is filled for real; its
 * tables of queue pairs and CQs (a million each on Soft-RoCE) are out of a test's reach, so the limits on
 * those come from the kernel's rdma cgroup controller ({@link RdmaCgroup}), which charges every queue pair, CQ,
 * region and domain a process makes; the size limits are the device's {@code max_cqe} and {@code max_qp_wr}.
 */
class DeviceLimitsIT {
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofMinutes(2));
    /** Connections with a CQ of their own: the CQ is the first object a connect makes, the queue pair the second. */
    private static final ConnectionOptions OWN_CQ = PeerMain.OPTIONS.toBuilder().sharedCompletionQueue(false).build();
    private static final List<String> CGROUP_PARTS = List.of("EAGAIN", "rdma cgroup", "hca_object=",
            "rdma.current", "rdma.max", "close the connections");

    @Test
    void objectsPastTheRdmaCgroupLimitFailTypedWhileOtherConnectionsKeepWorking() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        try (EchoServer echo = new EchoServer(PeerMain.OPTIONS)) {
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            RdmaConnection a = connectEchoing(echo, PeerMain.OPTIONS, inbox);
            int seq = echo(a, inbox, 0);
            try (RdmaCgroup cg = RdmaCgroup.enter("rdmaflux-device-limits", RdmaTestEnv.device())) {
                // No object at all: a connection with a CQ of its own fails making it.
                cg.limitObjects(Integer.toString(cg.objects()));
                refused(RdmaConnection.connect(echo.address(), OWN_CQ).then(), "ibv_create_cq", "completion queue");
                seq = echo(a, inbox, seq);

                // Room for its CQ only: the queue pair is refused.
                awaitObjects(cg, 0);
                cg.limitObjects("1");
                refused(RdmaConnection.connect(echo.address(), OWN_CQ).then(), "rdma_create_qp", "queue pair");
                seq = echo(a, inbox, seq);

                // A registration on the established connection is refused; the connection goes on.
                awaitObjects(cg, 0);
                cg.limitObjects("0");
                Arena arena = Arena.ofAuto();
                refused(Mono.fromCallable(() -> a.register(arena.allocate(1 << 20, 4096), AccessFlags.REMOTE_ALL)).then(),
                        "ibv_reg_mr", "memory region");
                seq = echo(a, inbox, seq);

                // Lifted: a new connection and a registration work again.
                cg.limitObjects("max");
                LinkedBlockingQueue<Object> bInbox = new LinkedBlockingQueue<>();
                RdmaConnection b = connectEchoing(echo, OWN_CQ, bInbox);
                echo(b, bInbox, 1000);
                assertTrue(cg.objects() >= 2, "the new connection's CQ and queue pair count: " + cg.objects());
                a.register(arena.allocate(1 << 20, 4096), AccessFlags.REMOTE_ALL).close();
                b.disposeNow(T);
                seq = echo(a, inbox, seq);
            }
            a.disposeNow(T);
            System.out.println("device limits: connection A echoed " + seq + " messages through three refusals");
        }
        Resources.awaitBaseline(baseline, T, "after the refused and the lifted connections");
    }

    /**
     * The device's own table of memory regions, filled: a verbs protection domain of this process registers
     * one page again and again until the device refuses. Soft-RoCE's {@code max_mr} (524,287) is within
     * reach: a region of a registered page costs its kernel about 5 KiB, 2.5 GiB in all, and the lanes' VMs
     * have 6 GiB. Queue pairs and CQs are not: a million of each, with queues of their own.
     */
    @Test
    void registrationsPastTheDevicesMaxMrFailTypedWhileOtherConnectionsKeepWorking() throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        try (EchoServer echo = new EchoServer(PeerMain.OPTIONS)) {
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            RdmaConnection a = connectEchoing(echo, PeerMain.OPTIONS, inbox);
            int seq = echo(a, inbox, 0);
            Arena arena = Arena.ofAuto();
            try (RdmaContext context = Rdma.open(RdmaTestEnv.device());
                 ProtectionDomain pd = context.allocateProtectionDomain()) {
                int maxMr = context.queryDevice().maxMr();
                int others = RdmaResources.snapshot().getOrDefault("mr", 0);
                MemorySegment page = arena.allocate(4096, 4096);
                List<MemoryRegion> regions = new ArrayList<>(maxMr);
                RdmaException refused = null;
                long t0 = System.nanoTime();
                try {
                    while (regions.size() <= maxMr) {
                        regions.add(pd.register(page));
                    }
                } catch (RdmaException e) {
                    refused = e;
                }
                try {
                    System.out.printf("device limits: %d regions registered in %.1f s besides the %d held before, then: %s%n",
                            regions.size(), (System.nanoTime() - t0) / 1e9, others, refused);
                    assertNotNull(refused, "the device took " + regions.size() + " regions besides " + others
                            + ", past its max_mr " + maxMr);
                    // Soft-RoCE's table holds one region fewer than the max_mr it reports.
                    int held = others + regions.size();
                    assertTrue(held == maxMr || held == maxMr - 1,
                            "regions on the device when it refused one: " + held + ", max_mr " + maxMr);
                    assertMaxMr(refused, maxMr);
                    // Full: the established connection echoes on, and its own registration is refused the same way.
                    seq = echo(a, inbox, seq);
                    RdmaException onConnection = assertThrows(RdmaException.class,
                            () -> a.register(arena.allocate(1 << 20, 4096), AccessFlags.REMOTE_ALL));
                    assertMaxMr(onConnection, maxMr);
                    seq = echo(a, inbox, seq);
                } finally {
                    long t1 = System.nanoTime();
                    regions.forEach(MemoryRegion::close);
                    System.out.printf("device limits: %d regions closed in %.1f s%n", regions.size(),
                            (System.nanoTime() - t1) / 1e9);
                }
            }
            // Room again: a registration and a new connection work, and the first connection goes on.
            a.register(arena.allocate(1 << 20, 4096), AccessFlags.REMOTE_ALL).close();
            LinkedBlockingQueue<Object> bInbox = new LinkedBlockingQueue<>();
            RdmaConnection b = connectEchoing(echo, PeerMain.OPTIONS, bInbox);
            echo(b, bInbox, 1000);
            b.disposeNow(T);
            seq = echo(a, inbox, seq);
            a.disposeNow(T);
            System.out.println("device limits: connection A echoed " + seq + " messages with the device's regions used up");
        }
        Resources.awaitBaseline(baseline, T, "after the device's regions were used up and closed");
    }

    /** A refused registration names the operation, the device's {@code max_mr} and what to do. */
    private static void assertMaxMr(RdmaException e, int maxMr) {
        RdmaResourceException r = assertInstanceOf(RdmaResourceException.class, e, () -> describe(e));
        assertEquals("ibv_reg_mr", r.operation(), r.getMessage());
        for (String part : List.of(RdmaTestEnv.device() + " holds at most " + maxMr + " memory regions (max_mr)",
                "close the connections, registrations and endpoints")) {
            assertTrue(r.getMessage().contains(part), "lacks '" + part + "': " + r.getMessage());
        }
    }

    @Test
    void aConnectionNeedingMoreCompletionsThanOneCqHoldsIsRefusedNamingMaxCqe() {
        int maxCqe;
        try (RcPair p = RcPair.open()) {
            DeviceAttributes device = p.context.queryDevice();
            maxCqe = device.maxCqe();
            // The verbs layer names the device's maximums itself.
            RdmaResourceException cq = assertInstanceOf(RdmaResourceException.class, fails(
                    () -> p.context.createCompletionQueue(maxCqe + 1, null, 0)));
            assertTrue(cq.getMessage().contains("asked for " + (maxCqe + 1) + " entries, more than max_cqe " + maxCqe),
                    cq.getMessage());
            RdmaResourceException qp = assertInstanceOf(RdmaResourceException.class, fails(() -> p.pd.createQueuePair(
                    QpInitAttributes.builder(QpType.RC).completionQueue(p.a.cq).depth(device.maxQpWr() + 1, 8).build())));
            assertTrue(qp.getMessage().contains("more than max_qp_wr " + device.maxQpWr()), qp.getMessage());
        }
        try (EchoServer echo = new EchoServer(PeerMain.OPTIONS)) {
            LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
            RdmaConnection a = connectEchoing(echo, PeerMain.OPTIONS, inbox);
            int seq = echo(a, inbox, 0);
            for (boolean shared : new boolean[] {true, false}) {
                ConnectionOptions big = PeerMain.OPTIONS.toBuilder().sharedCompletionQueue(shared)
                        .sendQueueDepth(maxCqe).build();
                StepVerifier.create(RdmaConnection.connect(echo.address(), big))
                        .expectErrorSatisfies(e -> {
                            RdmaResourceException r = assertInstanceOf(RdmaResourceException.class, e);
                            assertEquals("ibv_create_cq", r.operation());
                            for (String part : List.of("EINVAL", "sendQueueDepth " + maxCqe, "max_cqe " + maxCqe,
                                    "lower ConnectionOptions.sendQueueDepth or ConnectionOptions.receiveBuffers")) {
                                assertTrue(r.getMessage().contains(part), "lacks '" + part + "': " + r.getMessage());
                            }
                        })
                        .verify(T);
                seq = echo(a, inbox, seq);
            }
            a.disposeNow(T);
        }
    }

    /** {@return a connection to {@code echo} whose echoes (and failure) go to {@code inbox}} */
    private static RdmaConnection connectEchoing(EchoServer echo, ConnectionOptions options,
            LinkedBlockingQueue<Object> inbox) {
        RdmaConnection c = RdmaConnection.connect(echo.address(), options).block(T);
        c.receiveBytes().subscribe(inbox::add, inbox::add);
        return c;
    }

    /** Sends message {@code seq} and checks its echo; {@return the next sequence number} */
    private static int echo(RdmaConnection c, LinkedBlockingQueue<Object> inbox, int seq) {
        c.send(Payloads.message(seq, 1024)).block(T);
        Payloads.verify(Inbox.take(inbox, T), seq, 1024);
        return seq + 1;
    }

    /** Checks that {@code op} fails with the rdma cgroup's typed error for {@code what}. */
    private static void refused(Mono<Void> op, String operation, String what) {
        StepVerifier.create(op)
                .expectErrorSatisfies(e -> {
                    RdmaResourceException r = assertInstanceOf(RdmaResourceException.class, e, () -> describe(e));
                    assertEquals(operation, r.operation(), r.getMessage());
                    assertTrue(r.getMessage().contains("refused another " + what + " on " + RdmaTestEnv.device()),
                            r.getMessage());
                    for (String part : CGROUP_PARTS) {
                        assertTrue(r.getMessage().contains(part), "lacks '" + part + "': " + r.getMessage());
                    }
                    System.out.println("device limits: " + r.getMessage());
                })
                .verify(T);
    }

    /** The refused connect's CQ was freed with its id: what the cgroup counts goes back to {@code n}. */
    private static void awaitObjects(RdmaCgroup cg, int n) {
        org.awaitility.Awaitility.await("objects charged to " + cg.dir()).atMost(T)
                .pollInterval(Duration.ofMillis(200)).until(() -> cg.objects() == n);
    }

    private static Throwable fails(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            return e;
        }
        throw new AssertionError("did not fail");
    }

    private static String describe(Throwable e) {
        java.io.StringWriter w = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(w));
        return w.toString();
    }
}
