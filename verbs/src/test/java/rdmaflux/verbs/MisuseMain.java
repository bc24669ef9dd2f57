package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;

/**
 * The child JVM of {@link MisuseIT}: runs each misuse of the verbs API in turn on the real device and
 * prints one line per case, {@code CASE name -> result}. A misuse that reached the provider with freed
 * memory would kill this JVM (SIGSEGV, hs_err file) before it could print the rest and exit 0, which is
 * what the parent checks. The lifetime cases ({@link LifetimeCases}: objects closed while posted requests
 * use them) print the facts they checked in order, or the first that did not hold.
 */
public final class MisuseMain {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final Duration T = Duration.ofSeconds(30);

    private MisuseMain() {
    }

    /** A misuse that must fail with an exception. */
    @FunctionalInterface
    private interface Case {
        void run() throws Exception;
    }

    /** A misuse that must not crash and may end normally, with an outcome to report. */
    @FunctionalInterface
    private interface Outcome {
        String run() throws Exception;
    }

    /**
     * Runs every case.
     *
     * @param args unused
     */
    public static void main(String[] args) {
        run("post-send-closed-mr", () -> {
            try (RcPair p = RcPair.open()) {
                SendRequests s = new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 64);
                p.a.mr.close();
                p.a.qp.postSend(s, 1);
            }
        });
        run("sge-closed-mr", () -> {
            try (RcPair p = RcPair.open()) {
                p.a.mr.close();
                new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 64);
            }
        });
        run("post-receive-closed-mr", () -> {
            try (RcPair p = RcPair.open()) {
                ReceiveRequests r = new ReceiveRequests(1, 1).set(0, 1).sge(0, 0, p.b.mr, 0, 64);
                p.b.mr.close();
                p.b.qp.postReceive(r, 1);
            }
        });
        run("post-send-freed-arena", () -> {
            try (RcPair p = RcPair.open()) {
                Arena arena = Arena.ofShared();
                MemoryRegion mr = p.pd.register(arena.allocate(1 << 20, 4096));
                SendRequests s = new SendRequests(1, 1).set(0, 1, SendOpcode.RDMA_WRITE, SIGNALED)
                        .sge(0, 0, mr, 0, 4096).rdma(0, p.b.mr.address(), p.b.mr.rkey());
                arena.close();
                p.a.qp.postSend(s, 1);
            }
        });
        run("inline-send-freed-segment", () -> {
            try (RcPair p = RcPair.open()) {
                Arena arena = Arena.ofShared();
                MemorySegment payload = arena.allocate(32);
                SendRequests s = new SendRequests(1, 1)
                        .set(0, 1, SendOpcode.RDMA_WRITE, SendFlag.mask(SendFlag.SIGNALED, SendFlag.INLINE))
                        .sge(0, 0, payload, 0).rdma(0, p.b.mr.address(), p.b.mr.rkey());
                arena.close();
                p.a.qp.postSend(s, 1);
            }
        });
        run("ud-send-closed-ah", MisuseMain::udSendWithClosedAddressHandle);
        run("post-send-closed-qp", () -> {
            try (RcPair p = RcPair.open()) {
                SendRequests s = new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 8);
                p.a.qp.close();
                p.a.qp.postSend(s, 1);
            }
        });
        run("post-send-closed-cq", () -> {
            try (RcPair p = RcPair.open()) {
                SendRequests s = new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 8);
                p.a.cq.close(); // closes the QP that uses it first
                p.a.qp.postSend(s, 1);
            }
        });
        run("post-send-closed-pd", () -> {
            try (RcPair p = RcPair.open()) {
                SendRequests s = new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 8);
                p.pd.close(); // closes its QPs and MRs first
                p.a.qp.postSend(s, 1);
            }
        });
        run("extended-sge-closed-mr", () -> {
            try (RcPair p = RcPair.openExtended(java.util.EnumSet.of(SendOp.SEND))) {
                ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
                p.a.mr.close();
                sq.start();
                try {
                    sq.wrId(1).flags(SIGNALED).send().sge(p.a.mr, 0, 16);
                } finally {
                    sq.abort();
                }
            }
        });
        run("extended-inline-freed-segment", () -> {
            try (RcPair p = RcPair.openExtended(java.util.EnumSet.of(SendOp.SEND))) {
                ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
                Arena arena = Arena.ofShared();
                MemorySegment payload = arena.allocate(16);
                arena.close();
                sq.start();
                try {
                    sq.wrId(1).flags(SIGNALED).send().inlineData(payload);
                } finally {
                    sq.abort();
                }
            }
        });
        run("poll-closed-cq", () -> {
            try (RcPair p = RcPair.open()) {
                p.a.cq.close();
                p.a.cq.poll(new WorkCompletions(4));
            }
        });
        run("poll-cq-of-closed-channel", () -> {
            try (RcPair p = RcPair.open()) {
                p.a.channel.close(); // closes the CQ that reports to it, and that CQ's QP, first
                p.a.cq.poll(new WorkCompletions(4));
            }
        });
        run("srq-post-after-close", () -> {
            try (RcPair p = RcPair.open()) {
                SharedReceiveQueue srq = p.pd.createSharedReceiveQueue(4, 1, 0);
                ReceiveRequests r = new ReceiveRequests(1, 1).set(0, 1).sge(0, 0, p.b.mr, 0, 64);
                srq.close();
                srq.postReceive(r, 1);
            }
        });
        AccessFlags windowed = AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ, AccessFlag.MW_BIND);
        AccessFlags read = AccessFlags.of(AccessFlag.REMOTE_READ);
        run("close-mr-under-bound-window", () -> {
            try (RcPair p = RcPair.open()) {
                MemoryRegion mr = p.pd.register(p.b.buffer, windowed);
                MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
                SendRequests bind = new SendRequests(1, 1).set(0, 1, SendOpcode.BIND_MW, SIGNALED);
                bind.bindWindow(0, w, mr, 0, 4096, read);
                p.b.qp.postSend(bind, 1);
                Completions.awaitSuccess(p.b.cq, T);
                mr.close();
            }
        });
        // Why MemoryRegion.close() refuses: ibv_dereg_mr itself, called past that check, must fail and leave
        // the region registered (a success would free it under its owner, whose close then crashes this JVM).
        run("ibv-dereg-mr-under-bound-window", () -> {
            try (RcPair p = RcPair.open()) {
                MemoryRegion mr = p.pd.register(p.b.buffer, windowed);
                MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_1);
                w.bind(p.b.qp, mr, 0, 4096, read, 1, SIGNALED);
                Completions.awaitSuccess(p.b.cq, T);
                Calls.IBV_DEREG_MR.callStatus(mr.handle);
            }
        });
        run("post-bind-of-window-closed-since", () -> {
            try (RcPair p = RcPair.open()) {
                MemoryRegion mr = p.pd.register(p.b.buffer, windowed);
                MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
                SendRequests bind = new SendRequests(1, 1).set(0, 1, SendOpcode.BIND_MW, SIGNALED);
                bind.bindWindow(0, w, mr, 0, 4096, read);
                w.close();
                p.b.qp.postSend(bind, 1);
            }
        });
        run("bind-closed-type-1-window", () -> {
            try (RcPair p = RcPair.open()) {
                MemoryRegion mr = p.pd.register(p.b.buffer, windowed);
                MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_1);
                w.close();
                w.bind(p.b.qp, mr, 0, 4096, read, 1, SIGNALED);
            }
        });
        // Objects closed while posted requests use them (LifetimeCases).
        report("mr-closed-with-write-outstanding", LifetimeCases::closeRegionWithWriteOutstanding);
        report("extended-mr-closed-with-write-outstanding", LifetimeCases::closeRegionWithExtendedWriteOutstanding);
        report("mr-closed-with-receive-outstanding", LifetimeCases::closeRegionWithReceiveOutstanding);
        report("owned-region-closed-with-receive-outstanding", LifetimeCases::closeOwnedRegionWithReceiveOutstanding);
        report("ah-closed-with-ud-send-outstanding", LifetimeCases::closeAddressHandleWithSendOutstanding);
        report("qp-closed-with-receives-outstanding", LifetimeCases::closeQueuePairWithReceivesOutstanding);
        report("pd-closed-with-requests-outstanding", LifetimeCases::closeProtectionDomainWithRequestsOutstanding);
        report("window-closed-with-bind-outstanding", LifetimeCases::closeWindowWithBindOutstanding);
        report("type-2-window-closed-then-its-qp", LifetimeCases::closeType2WindowThenItsQueuePair);
        report("srq-regions-closed-with-receives-outstanding", LifetimeCases::closeRegionsWithSrqReceivesOutstanding);
        System.out.println("DONE");
    }

    private static void udSendWithClosedAddressHandle() {
        try (UdLoopback u = new UdLoopback(); Arena arena = Arena.ofConfined()) {
            MemoryRegion mr = u.pd.register(arena.allocate(4096));
            SendRequests s = new SendRequests(1, 1).set(0, 1, SendOpcode.SEND, SIGNALED).sge(0, 0, mr, 0, 9)
                    .ud(0, u.ah, u.qp.number(), UdLoopback.QKEY);
            u.ah.close();
            u.qp.postSend(s, 1);
        }
    }

    private static void run(String name, Case c) {
        report(name, () -> {
            c.run();
            return "no exception";
        });
    }

    private static void report(String name, Outcome c) {
        try {
            System.out.println("CASE " + name + " -> " + c.run());
        } catch (Exception e) {
            System.out.println("CASE " + name + " -> " + e.getClass().getName() + ": " + e.getMessage());
        }
        System.out.flush();
    }
}
