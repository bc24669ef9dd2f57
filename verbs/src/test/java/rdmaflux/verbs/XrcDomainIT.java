package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.RdmaTestEnv;

/** XRC domains on the sandbox's Soft-RoCE, whose provider has none: a typed EOPNOTSUPP, nothing leaked. */
class XrcDomainIT {
    @Test
    void softRoceHasNoXrcDomains() {
        assertTrue(RdmaTestEnv.inSandbox(), "this test describes Soft-RoCE, which has no XRC");
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device())) {
            RdmaUnsupportedException e = assertThrows(RdmaUnsupportedException.class, ctx::openXrcDomain);
            assertEquals("ibv_open_xrcd", e.operation());
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertEquals("EOPNOTSUPP", e.errnoName());
            assertTrue(e.getMessage().contains("ibv_open_xrcd") && e.getMessage().contains("has no XRC domains"),
                    e::getMessage);
            // The device says so too: no IBV_DEVICE_XRC. XRC SRQs and XRC receive QPs need a domain, so
            // nothing of XRC can be created on it.
            assertTrue(!ctx.queryDevice().capabilities().contains(DeviceCapability.XRC));
            // The context is still usable after the refusal.
            ctx.allocateProtectionDomain().close();
        }
    }
}
