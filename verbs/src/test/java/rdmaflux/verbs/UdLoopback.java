package rdmaflux.verbs;

import rdmaflux.testing.RdmaTestEnv;

/**
 * Test fixture: a UD queue pair on the test device, ready to send, and an address handle to itself, so a
 * datagram it sends comes back to it. Closing it closes the device context and everything made from it.
 */
final class UdLoopback implements AutoCloseable {
    static final int QKEY = 0x1234;

    final RdmaContext ctx;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final QueuePair qp;
    final AddressHandle ah;

    UdLoopback() {
        ctx = Rdma.open(RdmaTestEnv.device());
        try {
            pd = ctx.allocateProtectionDomain();
            cq = ctx.createCompletionQueue(16, null, 0);
            qp = pd.createQueuePair(QpInitAttributes.builder(QpType.UD).completionQueue(cq).build());
            QpConnectOptions opts = QpConnectOptions.builder().qkey(QKEY).build();
            qp.activateDatagram(opts, 0);
            Gid self = ctx.queryGid(1, opts.gidIndex());
            ah = pd.createAddressHandle(AddressHandleAttributes.global(1, self, opts.gidIndex()));
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
    }

    @Override
    public void close() {
        ctx.close();
    }
}
