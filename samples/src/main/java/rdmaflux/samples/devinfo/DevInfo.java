package rdmaflux.samples.devinfo;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import rdmaflux.verbs.DeviceAttributes;
import rdmaflux.verbs.DeviceCapability;
import rdmaflux.verbs.Gid;
import rdmaflux.verbs.GidEntry;
import rdmaflux.verbs.GidType;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.PortState;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.Transport;

/**
 * Lists RDMA devices, their ports and GID tables in the layout of rdma-core's {@code ibv_devinfo}, through
 * the verbs layer. Without {@code -v} the output is ibv_devinfo's line for line; with {@code -v} it is a
 * subset of ibv_devinfo's lines, in its order: the verbose fields of {@code ibv_device_attr} and
 * {@code ibv_port_attr} that are not obsolete, and the GID table with each entry's type, but none of the
 * extended device attributes (ODP, TSO, RSS, packet pacing, tag matching).
 *
 * <p>Run it with {@code scripts/sample devinfo.DevInfo -v} (on this host's device, or in the Soft-RoCE
 * sandbox when the host has none); see docs/samples.md.
 */
@Command(name = "devinfo", mixinStandardHelpOptions = true,
        description = "Show RDMA devices, ports and GID tables (like ibv_devinfo).")
public final class DevInfo implements Callable<Integer> {
    /** Creates the command with its default options; picocli sets the ones given. */
    public DevInfo() {
    }

    private static final Path SYSFS = Path.of("/sys/class/infiniband");

    @Spec
    CommandSpec spec;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEVICE", description = "Only this device (e.g. rxe0).")
    String device;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", description = "Only this port (from 1).")
    int port;

    @Option(names = {"-l", "--list"}, description = "Only list the device names.")
    boolean list;

    @Option(names = {"-v", "--verbose"},
            description = "Also print device limits, more port attributes and the GID tables.")
    boolean verbose;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new DevInfo()).execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!Rdma.isAvailable()) {
            err.println("devinfo: RDMA is not available: " + Rdma.unavailabilityCause().getMessage());
            err.flush();
            return 2;
        }
        List<RdmaDevice> devices = Rdma.devices();
        if (device != null) {
            devices = devices.stream().filter(d -> d.name().equals(device)).toList();
            if (devices.isEmpty()) {
                err.println("devinfo: no device named " + device + " (devices: "
                        + Rdma.devices().stream().map(RdmaDevice::name).toList() + ")");
                err.flush();
                return 1;
            }
        }
        if (list) {
            out.printf("%d HCA%s found:%n", devices.size(), devices.size() == 1 ? "" : "s");
            devices.forEach(d -> out.println("\t" + d.name()));
            out.println();
            out.flush();
            return 0;
        }
        for (RdmaDevice d : devices) {
            try (RdmaContext ctx = d.open()) {
                print(out, ctx);
            }
        }
        out.flush();
        return 0;
    }

    private void print(PrintWriter out, RdmaContext ctx) {
        DeviceAttributes dev = ctx.queryDevice();
        Transport transport = ctx.transport();
        out.println("hca_id:\t" + ctx.deviceName());
        out.printf("\ttransport:\t\t\t%s (%d)%n", transport(transport), transport.value());
        if (!dev.firmwareVersion().isEmpty()) {
            out.println("\tfw_ver:\t\t\t\t" + dev.firmwareVersion());
        }
        out.println("\tnode_guid:\t\t\t" + guid(dev.nodeGuid()));
        out.println("\tsys_image_guid:\t\t\t" + guid(dev.sysImageGuid()));
        out.printf("\tvendor_id:\t\t\t0x%04x%n", dev.vendorId());
        out.println("\tvendor_part_id:\t\t\t" + dev.vendorPartId());
        out.printf("\thw_ver:\t\t\t\t0x%X%n", dev.hardwareVersion());
        String boardId = boardId(ctx.deviceName());
        if (boardId != null) {
            out.println("\tboard_id:\t\t\t" + boardId);
        }
        out.println("\tphys_port_cnt:\t\t\t" + dev.physicalPortCount());
        if (verbose) {
            out.printf("\tmax_mr_size:\t\t\t0x%x%n", dev.maxMrSize());
            out.printf("\tpage_size_cap:\t\t\t0x%x%n", dev.pageSizeCap());
            out.println("\tmax_qp:\t\t\t\t" + dev.maxQp());
            out.println("\tmax_qp_wr:\t\t\t" + dev.maxQpWr());
            out.printf("\tdevice_cap_flags:\t\t0x%08x%n", dev.deviceCapFlags());
            for (DeviceCapability c : dev.capabilities()) {
                out.println("\t\t\t\t\t" + c.name());
            }
            int unknown = DeviceCapability.unknownBits(dev.deviceCapFlags());
            if (unknown != 0) {
                out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", unknown);
            }
            out.println("\tmax_sge:\t\t\t" + dev.maxSge());
            out.println("\tmax_sge_rd:\t\t\t" + dev.maxSgeRd());
            out.println("\tmax_cq:\t\t\t\t" + dev.maxCq());
            out.println("\tmax_cqe:\t\t\t" + dev.maxCqe());
            out.println("\tmax_mr:\t\t\t\t" + dev.maxMr());
            out.println("\tmax_pd:\t\t\t\t" + dev.maxPd());
            out.println("\tmax_qp_rd_atom:\t\t\t" + dev.maxQpRdAtomic());
            out.println("\tmax_res_rd_atom:\t\t" + dev.maxResRdAtomic());
            out.println("\tmax_qp_init_rd_atom:\t\t" + dev.maxQpInitRdAtomic());
            out.printf("\tatomic_cap:\t\t\t%s (%d)%n", atomicCapability(dev.atomicCapability()),
                    dev.atomicCapability());
            out.println("\tmax_mw:\t\t\t\t" + dev.maxMw());
            out.println("\tmax_mcast_grp:\t\t\t" + dev.maxMulticastGroups());
            out.println("\tmax_mcast_qp_attach:\t\t" + dev.maxMulticastQpAttach());
            out.println("\tmax_total_mcast_qp_attach:\t" + dev.maxTotalMulticastQpAttach());
            out.println("\tmax_ah:\t\t\t\t" + dev.maxAh());
            out.println("\tmax_srq:\t\t\t" + dev.maxSrq());
            if (dev.maxSrq() != 0) {
                out.println("\tmax_srq_wr:\t\t\t" + dev.maxSrqWr());
                out.println("\tmax_srq_sge:\t\t\t" + dev.maxSrqSge());
            }
            out.println("\tmax_pkeys:\t\t\t" + dev.maxPkeys());
            out.println("\tlocal_ca_ack_delay:\t\t" + dev.localCaAckDelay());
            out.println("\tnum_comp_vectors:\t\t" + ctx.completionVectorCount());
        }
        for (int p = 1; p <= dev.physicalPortCount(); p++) {
            if (port != 0 && p != port) {
                continue;
            }
            PortAttributes a = ctx.queryPort(p);
            out.println("\t\tport:\t" + p);
            out.printf("\t\t\tstate:\t\t\t%s (%d)%n", portState(a.state()), a.state().value());
            out.printf("\t\t\tmax_mtu:\t\t%d (%d)%n", a.maxMtu().bytes(), a.maxMtu().value());
            out.printf("\t\t\tactive_mtu:\t\t%d (%d)%n", a.activeMtu().bytes(), a.activeMtu().value());
            out.println("\t\t\tsm_lid:\t\t\t" + a.smLid());
            out.println("\t\t\tport_lid:\t\t" + a.lid());
            out.printf("\t\t\tport_lmc:\t\t0x%02x%n", a.lmc());
            out.println("\t\t\tlink_layer:\t\t" + linkLayer(a.linkLayer()));
            if (verbose) {
                out.printf("\t\t\tmax_msg_sz:\t\t0x%x%n", a.maxMessageSize());
                out.printf("\t\t\tport_cap_flags:\t\t0x%08x%n", a.capabilityFlags());
                out.printf("\t\t\tport_cap_flags2:\t0x%04x%n", a.capabilityFlags2());
                out.printf("\t\t\tmax_vl_num:\t\t%s (%d)%n", virtualLanes(a.maxVlNum()), a.maxVlNum());
                out.printf("\t\t\tbad_pkey_cntr:\t\t0x%x%n", a.badPkeyCounter());
                out.printf("\t\t\tqkey_viol_cntr:\t\t0x%x%n", a.qkeyViolationCounter());
                out.println("\t\t\tsm_sl:\t\t\t" + a.smSl());
                out.println("\t\t\tpkey_tbl_len:\t\t" + a.pkeyTableLength());
                out.println("\t\t\tgid_tbl_len:\t\t" + a.gidTableLength());
                out.println("\t\t\tsubnet_timeout:\t\t" + a.subnetTimeout());
                out.println("\t\t\tinit_type_reply:\t" + a.initTypeReply());
                out.printf("\t\t\tactive_width:\t\t%sX (%d)%n", width(a.activeWidth()), a.activeWidth());
                out.printf("\t\t\tactive_speed:\t\t%s (%d)%n", speed(a.activeSpeed()), a.activeSpeed());
                if (transport == Transport.IB) {
                    out.println("\t\t\tphys_state:\t\t" + physicalState(a.physicalState()));
                }
                for (GidEntry g : ctx.queryGidTable(p)) {
                    if (zeroInterfaceId(g.gid())) {
                        continue; // ibv_devinfo skips these too (it tests only the interface id half)
                    }
                    // RoCE v2 GIDs are IP addresses and print as such; IB and RoCE v1 ones as raw hex.
                    boolean v2 = g.type() == GidType.ROCE_V2;
                    out.printf("\t\t\tGID[%3d]:\t\t%s%s%n", g.index(), v2 ? GidText.of(g.gid()) : g.gid(),
                            a.isEthernet() ? (v2 ? ", RoCE v2" : ", RoCE v1") : "");
                }
            }
            out.println();
        }
    }

    /** {@return e.g. {@code f086:ddff:fedb:e077}, as ibv_devinfo prints GUIDs} */
    static String guid(long guid) {
        return String.format("%04x:%04x:%04x:%04x", (guid >>> 48) & 0xffff, (guid >>> 32) & 0xffff,
                (guid >>> 16) & 0xffff, guid & 0xffff);
    }

    private static String transport(Transport t) {
        return switch (t) {
            case IB -> "InfiniBand";
            case IWARP -> "iWARP";
            case USNIC -> "usNIC";
            case USNIC_UDP -> "usNIC UDP";
            case UNSPECIFIED -> "unspecified";
            case UNKNOWN -> "invalid transport";
        };
    }

    private static String portState(PortState s) {
        return switch (s) {
            case DOWN, INIT, ARMED, ACTIVE -> "PORT_" + s.name();
            default -> "invalid state";
        };
    }

    private static String atomicCapability(int value) {
        return switch (value) {
            case 0 -> "ATOMIC_NONE";
            case 1 -> "ATOMIC_HCA";
            case 2 -> "ATOMIC_GLOB";
            default -> "invalid atomic capability";
        };
    }

    private static String linkLayer(int value) {
        return switch (value) {
            case 0 -> "Unspecified";
            case PortAttributes.LINK_LAYER_INFINIBAND -> "InfiniBand";
            case PortAttributes.LINK_LAYER_ETHERNET -> "Ethernet";
            default -> "Unknown";
        };
    }

    private static String virtualLanes(int value) {
        return switch (value) {
            case 1 -> "1";
            case 2 -> "2";
            case 3 -> "4";
            case 4 -> "8";
            case 5 -> "15";
            default -> "invalid value";
        };
    }

    private static String width(int value) {
        return switch (value) {
            case 1 -> "1";
            case 2 -> "4";
            case 4 -> "8";
            case 8 -> "12";
            case 16 -> "2";
            default -> "invalid width";
        };
    }

    private static String speed(int value) {
        return switch (value) {
            case 1 -> "2.5 Gbps";
            case 2 -> "5.0 Gbps";
            case 4, 8 -> "10.0 Gbps";
            case 16 -> "14.0 Gbps";
            case 32 -> "25.0 Gbps";
            case 64 -> "50.0 Gbps";
            case 128 -> "100.0 Gbps";
            default -> "invalid speed";
        };
    }

    private static String physicalState(int value) {
        String name = switch (value) {
            case 1 -> "SLEEP";
            case 2 -> "POLLING";
            case 3 -> "DISABLED";
            case 4 -> "PORT_CONFIGURATION TRAINNING";
            case 5 -> "LINK_UP";
            case 6 -> "LINK_ERROR_RECOVERY";
            case 7 -> "PHY TEST";
            default -> "invalid physical state";
        };
        return name + " (" + value + ")";
    }

    private static boolean zeroInterfaceId(Gid gid) {
        byte[] raw = gid.toBytes();
        for (int i = 8; i < 16; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * The board id is no verbs attribute: ibv_devinfo reads it from sysfs, where only some drivers
     * (not rxe) provide it.
     */
    private static String boardId(String device) {
        try {
            String id = Files.readString(SYSFS.resolve(device).resolve("board_id")).strip();
            return id.isEmpty() ? null : id;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
