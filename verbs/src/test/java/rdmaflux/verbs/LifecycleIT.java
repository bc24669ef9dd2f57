package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.RdmaResources;
import rdmaflux.testing.RdmaTestEnv;

/** Ownership: closing a parent frees its children first, close is idempotent, use after close is an exception. */
class LifecycleIT {

    @Test
    void closingTheContextFreesEverythingAndTheKernelAgrees() {
        Map<String, Integer> before = RdmaResources.snapshot();
        RdmaContext ctx = Rdma.open(RdmaTestEnv.device());
        ProtectionDomain pd = ctx.allocateProtectionDomain();
        CompletionChannel ch = ctx.createCompletionChannel();
        CompletionQueue cq = ctx.createCompletionQueue(16, ch, 0);
        SharedReceiveQueue srq = pd.createSharedReceiveQueue(16, 1, 0);
        QueuePair qp = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).build());
        QueuePair qp2 = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                .sharedReceiveQueue(srq).build());
        AddressHandle ah = pd.createAddressHandle(AddressHandleAttributes.global(1, ctx.queryGid(1, 1), 1));
        try (Arena arena = Arena.ofConfined()) {
            MemoryRegion mr = pd.register(arena.allocate(8192));
            assertEquals(QpState.RESET, qp.state());
            assertTrue(cq.capacity() >= 16);
            Map<String, Integer> during = RdmaResources.snapshot();
            assertEquals(before.get("qp") + 2, during.get("qp"), during::toString);
            assertEquals(before.get("mr") + 1, during.get("mr"), during::toString);

            ctx.close(); // CQ is in use by the QPs, PD by the MR: only the teardown order makes this work
            for (NativeResource r : new NativeResource[] {ctx, pd, ch, cq, srq, qp, qp2, ah, mr}) {
                assertTrue(r.isClosed(), r + " still open");
            }
            ctx.close(); // idempotent
            mr.close();
            assertEquals(before, RdmaResources.snapshot());

            IllegalStateException e = assertThrows(IllegalStateException.class, () -> qp.postReceive(
                    new ReceiveRequests(1, 1).set(0, 1).sge(0, 0, mr, 0, 64), 1));
            assertTrue(e.getMessage().contains("is closed"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> pd.createSharedReceiveQueue(4, 1, 0));
            assertThrows(IllegalStateException.class, ctx::queryDevice);
            assertThrows(IllegalStateException.class, () -> cq.poll(new WorkCompletions(4)));
        }
    }

    @Test
    void badArgumentsFailClearlyBeforeReachingTheDevice() {
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device()); Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            assertThrows(IllegalArgumentException.class, () -> pd.register(MemorySegment.ofArray(new byte[64])));
            assertThrows(IllegalArgumentException.class, () -> pd.register(arena.allocate(0)));
            assertThrows(NullPointerException.class, () -> pd.register(null));
            assertThrows(IllegalArgumentException.class, () -> ctx.createCompletionQueue(0, null, 0));
            assertThrows(IllegalArgumentException.class, () -> ctx.queryPort(0));
            CompletionQueue cq = ctx.createCompletionQueue(8, null, 0);
            QueuePair qp = pd.createQueuePair(QpInitAttributes.builder(QpType.RC).completionQueue(cq).sge(1, 1).build());
            MemoryRegion mr = pd.register(arena.allocate(4096));
            // Two SGEs on a QP that takes one: refused in Java, not by the provider.
            ReceiveRequests two = new ReceiveRequests(1, 2).set(0, 1).sge(0, 0, mr, 0, 64).sge(0, 1, mr, 64, 64);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> qp.postReceive(two, 1));
            assertTrue(e.getMessage().contains("at most 1"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> new ReceiveRequests(1, 1).sge(0, 0, mr, 4000, 200));
            assertThrows(IllegalStateException.class, () -> cq.requestNotification(false));
            assertThrows(IllegalStateException.class, mr::toRemoteBuffer);
            // A huge CQ is the device's call: a typed exception, not a crash.
            RdmaException tooBig = assertThrows(RdmaException.class,
                    () -> ctx.createCompletionQueue(Integer.MAX_VALUE, null, 0));
            assertTrue(tooBig.errno() > 0, tooBig::toString);
            assertTrue(tooBig.getMessage().contains("ibv_create_cq"), tooBig.getMessage());
        }
    }
}
