package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.RdmaTestEnv;

/** The device as libibverbs and the kernel report it. */
class DeviceIT {

    @Test
    void deviceIsListedAvailableAndQueryable() {
        String name = RdmaTestEnv.device();
        assertTrue(Rdma.isAvailable());
        assertNull(Rdma.unavailabilityCause());
        assertTrue(Rdma.devices().stream().anyMatch(d -> d.name().equals(name)), () -> "devices: " + Rdma.devices());

        try (RdmaContext ctx = Rdma.open(name)) {
            assertEquals(name, ctx.deviceName());
            DeviceAttributes dev = ctx.queryDevice();
            assertTrue(dev.maxQp() > 0 && dev.maxCqe() > 0 && dev.maxMr() > 0, dev::toString);
            assertTrue(dev.physicalPortCount() >= 1, dev::toString);

            PortAttributes port = ctx.queryPort(1);
            assertEquals(PortState.ACTIVE, port.state(), port::toString);
            assertTrue(port.gidTableLength() > 0, port::toString);
            if (RdmaTestEnv.inSandbox()) {
                assertTrue(port.isEthernet(), "Soft-RoCE is RoCE: " + port);
            }
        }
    }

    @Test
    void gidTableHoldsTheInterfaceAddress() {
        try (RdmaContext ctx = Rdma.open(RdmaTestEnv.device())) {
            List<RdmaContext.IndexedGid> gids = ctx.gidTable(1);
            assertTrue(gids.stream().anyMatch(g -> g.gid().toInetAddress().equals(RdmaTestEnv.address())),
                    () -> "GID table " + gids + " lacks " + RdmaTestEnv.address());
            RdmaContext.IndexedGid first = gids.getFirst();
            assertEquals(first.gid(), ctx.queryGid(1, first.index()));
        }
    }
}
