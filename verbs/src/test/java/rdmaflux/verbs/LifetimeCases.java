package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.time.Duration;

import rdmaflux.testing.Completions;
import rdmaflux.testing.RcPair;
import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The lifetime cases of {@link MisuseMain}: objects closed while posted work requests use them. Each checks
 * its facts in order (the object closed at once, still alive natively, the requests' outcome, the destroy
 * when they ended) and returns them, or throws naming the first that did not hold.
 */
final class LifetimeCases {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final Duration T = Duration.ofSeconds(30);

    private LifetimeCases() {
    }

    /** What a lifetime case checked, in order; the first fact that does not hold ends the case. */
    private static final class Facts {
        private final StringBuilder held = new StringBuilder();

        Facts expect(boolean holds, String fact) {
            if (!holds) {
                throw new IllegalStateException("NOT " + fact + " (after: " + held + ")");
            }
            held.append(held.isEmpty() ? "" : "; ").append(fact);
            return this;
        }

        @Override
        public String toString() {
            return held.toString();
        }
    }

    /** {@return the memory regions the kernel has, of every process} */
    private static int kernelRegions() {
        return RdmaResources.snapshot().getOrDefault("mr", 0);
    }

    /** {@return the message of the exception {@code action} throws, or "nothing"} */
    private static String thrown(Runnable action) {
        try {
            action.run();
            return "nothing";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /**
     * A region closed right after a 64 KiB RDMA WRITE from it was posted: closed at once for new posts, still
     * registered (the kernel's count) until the write's completion is polled, deregistered by that poll.
     */
    static String closeRegionWithWriteOutstanding() {
        try (RcPair p = RcPair.open()) {
            SendRequests s = new SendRequests(1, 1).set(0, 7, SendOpcode.RDMA_WRITE, SIGNALED)
                    .sge(0, 0, p.a.mr, 0, RcPair.BUFFER).rdma(0, p.b.mr.address(), p.b.mr.rkey());
            int before = kernelRegions();
            p.a.qp.postSend(s, 1);
            p.a.mr.close();
            Facts f = new Facts();
            f.expect(p.a.mr.isClosed() && !p.a.mr.isDestroyed(), "closed, not destroyed");
            f.expect(thrown(() -> p.a.qp.postSend(s, 1)).contains("is closed"), "a new post refused");
            f.expect(kernelRegions() == before, "still registered");
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.a.cq, wc, T);
            f.expect(wc.status(0) == WcStatus.SUCCESS, "write completed SUCCESS");
            f.expect(p.a.mr.isDestroyed() && kernelRegions() == before - 1, "deregistered by the poll");
            return f.toString();
        }
    }

    /** The same through the extended post API: its sge() leases the region as postSend does. */
    static String closeRegionWithExtendedWriteOutstanding() {
        try (RcPair p = RcPair.openExtended(java.util.EnumSet.of(SendOp.RDMA_WRITE))) {
            ExtendedSendQueue sq = p.a.qp.extendedSendQueue();
            int before = kernelRegions();
            sq.start();
            sq.wrId(8).flags(SIGNALED).rdmaWrite(p.b.mr.rkey(), p.b.mr.address()).sge(p.a.mr, 0, RcPair.BUFFER);
            sq.complete();
            p.a.mr.close();
            Facts f = new Facts();
            f.expect(p.a.mr.isClosed() && !p.a.mr.isDestroyed() && kernelRegions() == before,
                    "closed, still registered");
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.a.cq, wc, T);
            f.expect(wc.status(0) == WcStatus.SUCCESS && wc.wrId(0) == 8, "write completed SUCCESS");
            f.expect(p.a.mr.isDestroyed() && kernelRegions() == before - 1, "deregistered by the poll");
            return f.toString();
        }
    }

    /**
     * A receive posted into a region that is then closed, before the peer's SEND lands: the data arrives
     * (the region was still registered), the completion is SUCCESS, the poll deregisters the region.
     */
    static String closeRegionWithReceiveOutstanding() {
        try (RcPair p = RcPair.open()) {
            int before = kernelRegions();
            p.b.qp.postReceive(new ReceiveRequests(1, 1).set(0, 3).sge(0, 0, p.b.mr, 0, 64), 1);
            p.b.mr.close();
            Facts f = new Facts();
            f.expect(p.b.mr.isClosed() && !p.b.mr.isDestroyed() && kernelRegions() == before,
                    "closed, still registered");
            p.a.buffer.asSlice(0, 64).fill((byte) 0x5a);
            p.a.qp.postSend(new SendRequests(1, 1).set(0, 4, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 64), 1);
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.b.cq, wc, T);
            f.expect(wc.status(0) == WcStatus.SUCCESS && wc.byteLength(0) == 64, "receive completed SUCCESS");
            f.expect(p.b.buffer.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63) == 0x5a, "the data landed");
            f.expect(p.b.mr.isDestroyed() && kernelRegions() == before - 1, "deregistered by the poll");
            Completions.awaitSuccess(p.a.cq, T);
            return f.toString();
        }
    }

    /** A region that owns its memory frees it only after its deferred deregistration. */
    static String closeOwnedRegionWithReceiveOutstanding() {
        try (RcPair p = RcPair.open()) {
            MemoryRegion owned = p.pd.allocateRegion(4096, 4096, AccessFlags.LOCAL_WRITE);
            p.b.qp.postReceive(new ReceiveRequests(1, 1).set(0, 5).sge(0, 0, owned, 0, 4096), 1);
            owned.close();
            Facts f = new Facts();
            f.expect(owned.isClosed() && !owned.isDestroyed(), "closed, not destroyed");
            f.expect(owned.segment().scope().isAlive(), "its memory still allocated");
            p.a.qp.postSend(new SendRequests(1, 1).set(0, 6, SendOpcode.SEND, SIGNALED).sge(0, 0, p.a.mr, 0, 512), 1);
            WorkCompletions wc = new WorkCompletions(1);
            Completions.awaitOne(p.b.cq, wc, T);
            f.expect(wc.status(0) == WcStatus.SUCCESS, "receive completed SUCCESS");
            f.expect(owned.isDestroyed() && !owned.segment().scope().isAlive(), "deregistered, then its memory freed");
            Completions.awaitSuccess(p.a.cq, T);
            return f.toString();
        }
    }

    /**
     * An address handle closed while a UD send to it is outstanding: refused for new sends at once, destroyed
     * once the send's completion is polled; the datagram arrives.
     */
    static String closeAddressHandleWithSendOutstanding() {
        try (UdLoopback u = new UdLoopback(); Arena arena = Arena.ofShared()) {
            CompletionQueue cq = u.cq;
            QueuePair qp = u.qp;
            AddressHandle ah = u.ah;
            MemoryRegion mr = u.pd.register(arena.allocate(8192));
            qp.postReceive(new ReceiveRequests(1, 1).set(0, 1).sge(0, 0, mr, 4096, 40 + 1024), 1);
            SendRequests s = new SendRequests(1, 1).set(0, 2, SendOpcode.SEND, SIGNALED).sge(0, 0, mr, 0, 9)
                    .ud(0, ah, qp.number(), UdLoopback.QKEY);
            qp.postSend(s, 1);
            ah.close();
            Facts f = new Facts();
            f.expect(ah.isClosed() && !ah.isDestroyed(), "closed, not destroyed");
            f.expect(thrown(() -> qp.postSend(s, 1)).contains("AddressHandle"), "a new send refused");
            WorkCompletions wc = new WorkCompletions(4);
            boolean sent = false;
            boolean received = false;
            long deadline = System.nanoTime() + T.toNanos();
            while (!(sent && received) && System.nanoTime() < deadline) {
                int n = cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    if (wc.status(i) != WcStatus.SUCCESS) {
                        throw new IllegalStateException("completion failed: " + wc.describe(i));
                    }
                    sent |= wc.wrId(i) == 2;
                    received |= wc.wrId(i) == 1 && wc.byteLength(i) == 40 + 9;
                }
            }
            f.expect(sent && received, "send and receive completed SUCCESS");
            f.expect(ah.isDestroyed(), "destroyed by the poll");
            return f.toString();
        }
    }

    /** Destroying a QP ends its outstanding requests: a region they held, closed before, is deregistered with it. */
    static String closeQueuePairWithReceivesOutstanding() {
        try (RcPair p = RcPair.open()) {
            MemoryRegion mr = p.pd.register(p.b.buffer.asSlice(0, 8192));
            int before = kernelRegions();
            ReceiveRequests r = new ReceiveRequests(4, 1);
            for (int i = 0; i < 4; i++) {
                r.set(i, i).sge(i, 0, mr, 1024L * i, 1024);
            }
            p.b.qp.postReceive(r, 4);
            mr.close();
            Facts f = new Facts();
            f.expect(!mr.isDestroyed() && kernelRegions() == before, "region closed, still registered");
            p.b.qp.close();
            f.expect(mr.isDestroyed() && kernelRegions() == before - 1, "deregistered by the QP's close");
            MemoryRegion later = p.pd.register(p.a.buffer.asSlice(0, 4096));
            p.a.qp.postReceive(new ReceiveRequests(1, 1).set(0, 9).sge(0, 0, later, 0, 4096), 1);
            p.a.qp.close();
            later.close();
            f.expect(later.isDestroyed(), "a region closed after its QP deregistered at once");
            return f.toString();
        }
    }

    /** Closing the PD with requests outstanding on both sides: everything goes, in order, nothing crashes. */
    static String closeProtectionDomainWithRequestsOutstanding() {
        try (RcPair p = RcPair.open()) {
            int before = kernelRegions();
            p.b.qp.postReceive(new ReceiveRequests(1, 1).set(0, 1).sge(0, 0, p.b.mr, 0, 64), 1);
            p.a.qp.postSend(new SendRequests(2, 1).set(0, 2, SendOpcode.RDMA_WRITE, 0).sge(0, 0, p.a.mr, 0, RcPair.BUFFER)
                    .rdma(0, p.b.mr.address(), p.b.mr.rkey())
                    .set(1, 3, SendOpcode.RDMA_READ, SIGNALED).sge(1, 0, p.a.mr, 0, RcPair.BUFFER)
                    .rdma(1, p.b.mr.address(), p.b.mr.rkey()), 2);
            p.a.mr.close();
            p.pd.close();
            Facts f = new Facts();
            f.expect(p.a.qp.isDestroyed() && p.b.qp.isDestroyed(), "QPs destroyed");
            f.expect(p.a.mr.isDestroyed() && p.b.mr.isDestroyed() && p.pd.isDestroyed(), "regions and PD destroyed");
            f.expect(kernelRegions() == before - 2, "the kernel agrees");
            f.expect(p.a.cq.poll(new WorkCompletions(8)) >= 0, "the CQ still polls");
            return f.toString();
        }
    }

    /**
     * A type-1 window closed while its bind is outstanding: its deallocation waits for the bind's completion,
     * until which it still holds its region; then the region closes.
     */
    static String closeWindowWithBindOutstanding() {
        try (RcPair p = RcPair.open()) {
            AccessFlags windowed = AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ, AccessFlag.MW_BIND);
            MemoryRegion mr = p.pd.register(p.b.buffer, windowed);
            MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_1);
            w.bind(p.b.qp, mr, 0, 4096, AccessFlags.of(AccessFlag.REMOTE_READ), 1, SIGNALED);
            w.close();
            Facts f = new Facts();
            f.expect(w.isClosed() && !w.isDestroyed(), "window closed, not destroyed");
            f.expect(thrown(mr::close).contains("held by 1 memory window"), "its region still held");
            Completions.awaitSuccess(p.b.cq, T);
            f.expect(w.isDestroyed() && mr.boundWindowCount() == 0, "deallocated by the poll");
            mr.close();
            f.expect(mr.isDestroyed(), "then the region closes");
            return f.toString();
        }
    }

    /**
     * Receives posted to an SRQ into two regions, both closed: the completion of the one a QP took
     * deregisters only its region; closing the SRQ ends the other.
     */
    static String closeRegionsWithSrqReceivesOutstanding() {
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device()); Arena arena = Arena.ofShared()) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(64, null, 0);
            SharedReceiveQueue srq = pd.createSharedReceiveQueue(16, 1, 0);
            QueuePair a = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).build());
            QueuePair b = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                    .sharedReceiveQueue(srq).build());
            QpConnectOptions o = QpConnectOptions.DEFAULTS;
            a.connect(b.localEndpoint(o, 0x111), 0x222, o);
            b.connect(a.localEndpoint(o, 0x222), 0x111, o);
            MemoryRegion source = pd.register(arena.allocate(4096));
            MemoryRegion first = pd.register(arena.allocate(4096));
            MemoryRegion second = pd.register(arena.allocate(4096));
            srq.postReceive(new ReceiveRequests(2, 1).set(0, 1).sge(0, 0, first, 0, 4096)
                    .set(1, 2).sge(1, 0, second, 0, 4096), 2);
            first.close();
            second.close();
            Facts f = new Facts();
            f.expect(!first.isDestroyed() && !second.isDestroyed(), "both closed, not destroyed");
            a.postSend(new SendRequests(1, 1).set(0, 3, SendOpcode.SEND, SIGNALED).sge(0, 0, source, 0, 64), 1);
            WorkCompletions wc = new WorkCompletions(4);
            int done = 0;
            long deadline = System.nanoTime() + T.toNanos();
            while (done < 2 && System.nanoTime() < deadline) {
                int n = cq.poll(wc);
                for (int i = 0; i < n; i++) {
                    if (wc.status(i) != WcStatus.SUCCESS) {
                        throw new IllegalStateException("completion failed: " + wc.describe(i));
                    }
                }
                done += n;
            }
            f.expect(done == 2, "send and receive completed SUCCESS");
            f.expect(first.isDestroyed() && !second.isDestroyed(), "the poll deregistered the taken receive's region only");
            srq.close();
            f.expect(b.isDestroyed() && second.isDestroyed(), "closing the SRQ (and its QP) deregistered the other");
            return f.toString();
        }
    }

    /**
     * A type-2 window closed with its bind outstanding, then its QP closed before the completion was polled:
     * rxe keeps a reference to the QP from the bound window, so the QP lets go of the window first and the
     * window is deallocated before the QP is destroyed (else ibv_destroy_qp would wait for it).
     */
    static String closeType2WindowThenItsQueuePair() {
        try (RcPair p = RcPair.open()) {
            AccessFlags windowed = AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ, AccessFlag.MW_BIND);
            MemoryRegion mr = p.pd.register(p.b.buffer, windowed);
            MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindowType.TYPE_2);
            SendRequests bind = new SendRequests(1, 1).set(0, 1, SendOpcode.BIND_MW, SIGNALED);
            bind.bindWindow(0, w, mr, 0, 4096, AccessFlags.of(AccessFlag.REMOTE_READ));
            p.b.qp.postSend(bind, 1);
            w.close();
            Facts f = new Facts();
            f.expect(w.isClosed() && !w.isDestroyed(), "window closed, not destroyed");
            long start = System.nanoTime();
            p.b.qp.close();
            f.expect(w.isDestroyed() && p.b.qp.isDestroyed(), "both destroyed by the QP's close");
            f.expect(System.nanoTime() - start < T.toNanos(), "without waiting");
            mr.close();
            f.expect(mr.isDestroyed(), "then the region closes");
            return f.toString();
        }
    }
}
