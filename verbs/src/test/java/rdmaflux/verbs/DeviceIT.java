package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.RdmaTestEnv;

/** The device, its ports and GID table as libibverbs reports them, checked against the kernel's sysfs. */
class DeviceIT {
    private static final Path SYSFS = Path.of("/sys/class/infiniband");

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
    void deviceIdentityMatchesSysfs() throws IOException {
        String name = RdmaTestEnv.device();
        Path dir = SYSFS.resolve(name);
        // node_type reads "1: CA"; libibverbs derives the transport from it the same way.
        NodeType nodeType = NodeType.of(Integer.parseInt(read(dir.resolve("node_type")).split(":")[0]));
        Transport transport = switch (nodeType) {
            case CA, SWITCH, ROUTER -> Transport.IB;
            case RNIC -> Transport.IWARP;
            case USNIC -> Transport.USNIC;
            case USNIC_UDP -> Transport.USNIC_UDP;
            case UNSPECIFIED -> Transport.UNSPECIFIED;
            case UNKNOWN -> Transport.UNKNOWN;
        };
        RdmaDevice listed = Rdma.devices().stream().filter(d -> d.name().equals(name)).findFirst().orElseThrow();
        assertEquals(nodeType, listed.nodeType());
        assertEquals(transport, listed.transport());
        assertEquals(guid(dir.resolve("node_guid")), listed.nodeGuid());

        try (RdmaContext ctx = Rdma.open(name)) {
            assertEquals(nodeType, ctx.nodeType());
            assertEquals(transport, ctx.transport());
            DeviceAttributes dev = ctx.queryDevice();
            assertEquals(guid(dir.resolve("node_guid")), dev.nodeGuid(), dev::toString);
            assertEquals(guid(dir.resolve("sys_image_guid")), dev.sysImageGuid(), dev::toString);
            // A device must at least support the host's page size.
            assertTrue((dev.pageSizeCap() & 4096) != 0, () -> Long.toHexString(dev.pageSizeCap()));
            assertTrue(dev.maxSgeRd() > 0 && dev.maxSgeRd() <= dev.maxSge(), dev::toString);
            assertTrue(dev.maxResRdAtomic() >= dev.maxQpRdAtomic(), dev::toString);
            assertTrue(dev.maxTotalMulticastQpAttach() >= dev.maxMulticastQpAttach(), dev::toString);
            assertTrue(dev.maxPkeys() >= ctx.queryPort(1).pkeyTableLength(), dev::toString);
            assertEquals(dev.capabilities().size(), Integer.bitCount(dev.deviceCapFlags()
                    & ~DeviceCapability.unknownBits(dev.deviceCapFlags())));
            if (RdmaTestEnv.inSandbox()) {
                // What rdma_rxe reports (drivers/infiniband/sw/rxe/rxe_param.h): these fields are not
                // zero-filled leftovers but the kernel's values.
                assertEquals(NodeType.CA, nodeType);
                assertTrue(dev.hasCapability(DeviceCapability.SYS_IMAGE_GUID), dev::toString);
                assertTrue(dev.hasCapability(DeviceCapability.MEM_MGT_EXTENSIONS), dev::toString);
                assertTrue(dev.maxMw() > 0, dev::toString);
                assertEquals(15, dev.localCaAckDelay(), dev::toString);
                assertEquals(64, dev.maxPkeys(), dev::toString);
            }
        }
    }

    @Test
    void portAttributesMatchSysfs() throws IOException {
        String name = RdmaTestEnv.device();
        Path dir = SYSFS.resolve(name).resolve("ports").resolve("1");
        try (RdmaContext ctx = Rdma.open(name)) {
            // rdma-core 44 has verbs_context.query_port, so port_cap_flags2 is read rather than left 0.
            assertTrue(ctx.queriesFullPortAttributes());
            PortAttributes port = ctx.queryPort(1);
            assertEquals(Integer.decode(read(dir.resolve("lid"))), port.lid(), port::toString);
            assertEquals(Integer.decode(read(dir.resolve("sm_lid"))), port.smLid(), port::toString);
            assertEquals(Integer.parseInt(read(dir.resolve("lid_mask_count"))), port.lmc(), port::toString);
            assertEquals(Integer.parseInt(read(dir.resolve("sm_sl"))), port.smSl(), port::toString);
            assertEquals(Integer.decode(read(dir.resolve("cap_mask"))), port.capabilityFlags(), port::toString);
            assertEquals(Integer.parseInt(read(dir.resolve("phys_state")).split(":")[0]), port.physicalState());
            try (Stream<Path> pkeys = Files.list(dir.resolve("pkeys"))) {
                assertEquals(pkeys.count(), port.pkeyTableLength(), port::toString);
            }
            try (Stream<Path> gids = Files.list(dir.resolve("gids"))) {
                assertEquals(gids.count(), port.gidTableLength(), port::toString);
            }
            assertEquals(port.capabilities().size(), Integer.bitCount(port.capabilityFlags()), port::toString);
            if (RdmaTestEnv.inSandbox()) {
                assertTrue(port.hasCapability(PortCapability.CM_SUP), port::toString);
                assertTrue(port.maxVlNum() >= 1, port::toString);
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
            assertEquals(ctx.queryGidTable(1).stream().map(e -> new RdmaContext.IndexedGid(e.index(), e.gid()))
                    .toList(), gids);
        }
    }

    @Test
    void gidEntriesMatchSysfs() throws IOException {
        String name = RdmaTestEnv.device();
        Path dir = SYSFS.resolve(name).resolve("ports").resolve("1");
        try (RdmaContext ctx = Rdma.open(name)) {
            PortAttributes port = ctx.queryPort(1);
            List<GidEntry> table = ctx.queryGidTable(1);
            assertEquals(table, ctx.queryGidTable().stream().filter(e -> e.port() == 1).toList());

            // Every non-zero entry of sysfs, in index order, with the kernel's type and network device.
            List<GidEntry> fromSysfs = new ArrayList<>();
            int unused = -1;
            for (int i = 0; i < port.gidTableLength(); i++) {
                Gid gid = Gid.of(HexFormat.of().parseHex(read(dir.resolve("gids").resolve(Integer.toString(i)))
                        .replace(":", "")));
                if (gid.isZero()) {
                    unused = unused < 0 ? i : unused;
                    continue;
                }
                String type = read(dir.resolve("gid_attrs").resolve("types").resolve(Integer.toString(i)));
                GidType t = switch (type) {
                    case "RoCE v2" -> GidType.ROCE_V2;
                    case "IB/RoCE v1" -> port.isEthernet() ? GidType.ROCE_V1 : GidType.IB;
                    default -> throw new AssertionError("sysfs GID type " + type);
                };
                String ndev = readOrNull(dir.resolve("gid_attrs").resolve("ndevs").resolve(Integer.toString(i)));
                int ifindex = ndev == null ? 0 : NetworkInterface.getByName(ndev).getIndex();
                fromSysfs.add(new GidEntry(1, i, gid, t, ifindex));
            }
            assertEquals(fromSysfs, table);
            assertFalse(table.isEmpty());

            for (GidEntry e : table) {
                assertEquals(Optional.of(e), ctx.queryGidEntry(1, e.index()));
            }
            GidEntry mine = table.stream().filter(e -> e.gid().toInetAddress().equals(RdmaTestEnv.address()))
                    .findFirst().orElseThrow(() -> new AssertionError(table + " lacks " + RdmaTestEnv.address()));
            NetworkInterface nic = NetworkInterface.getByInetAddress(RdmaTestEnv.address());
            assertEquals(Optional.of(nic), mine.networkInterface());
            if (RdmaTestEnv.inSandbox()) {
                assertEquals(GidType.ROCE_V2, mine.type(), mine::toString);
            }

            if (RdmaTestEnv.inSandbox()) {
                assertTrue(unused >= 0, "rxe's 1024-entry table has unused entries: " + table);
            }
            if (unused >= 0) {
                assertEquals(Optional.empty(), ctx.queryGidEntry(1, unused));
            }
            RdmaException beyond = assertThrows(RdmaException.class,
                    () -> ctx.queryGidEntry(1, port.gidTableLength()));
            assertEquals(Errno.EINVAL, beyond.errno(), beyond::getMessage);
        }
    }

    private static long guid(Path file) throws IOException {
        return Long.parseUnsignedLong(read(file).replace(":", ""), 16);
    }

    private static String read(Path file) throws IOException {
        return Files.readString(file).strip();
    }

    /** sysfs answers EINVAL for attributes of an entry or device that has none. */
    private static String readOrNull(Path file) {
        try {
            String s = read(file);
            return s.isEmpty() ? null : s;
        } catch (IOException e) {
            return null;
        }
    }
}
