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
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;

/**
 * Lists RDMA devices, their ports and GID tables in the layout of rdma-core's {@code ibv_devinfo -v}
 * (a subset of its fields), through the verbs layer.
 *
 * <p>Run it on the Soft-RoCE sandbox from the project root (after {@code ./mvnw -q install -DskipTests}):
 * <pre>{@code
 * scripts/sandbox/run -- $JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED \
 *     -cp samples/target/classes:$(cat samples/target/runtime-classpath.txt) \
 *     rdmaflux.samples.devinfo.DevInfo -v
 * }</pre>
 * On a host with its own RDMA device, run the same {@code java} command without the sandbox.
 */
@Command(name = "devinfo", mixinStandardHelpOptions = true,
        description = "Show RDMA devices, ports and GID tables (like ibv_devinfo -v).")
public final class DevInfo implements Callable<Integer> {
    private static final Path SYSFS = Path.of("/sys/class/infiniband");

    @Spec
    CommandSpec spec;

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEVICE", description = "Only this device (e.g. rxe0).")
    String device;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", description = "Only this port (from 1).")
    int port;

    @Option(names = {"-l", "--list"}, description = "Only list the device names.")
    boolean list;

    @Option(names = {"-v", "--verbose"}, description = "Also print device limits and more port attributes.")
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
        out.println("hca_id:\t" + ctx.deviceName());
        out.println("\tfw_ver:\t\t\t\t" + (dev.firmwareVersion().isEmpty() ? "0.0.0" : dev.firmwareVersion()));
        out.println("\tnode_guid:\t\t\t" + guid(dev.nodeGuid()));
        out.printf("\tvendor_id:\t\t\t0x%04x%n", dev.vendorId());
        out.println("\tvendor_part_id:\t\t\t" + dev.vendorPartId());
        out.printf("\thw_ver:\t\t\t\t0x%X%n", dev.hardwareVersion());
        out.println("\tphys_port_cnt:\t\t\t" + dev.physicalPortCount());
        if (verbose) {
            out.printf("\tmax_mr_size:\t\t\t0x%x%n", dev.maxMrSize());
            out.println("\tmax_qp:\t\t\t\t" + dev.maxQp());
            out.println("\tmax_qp_wr:\t\t\t" + dev.maxQpWr());
            out.println("\tmax_sge:\t\t\t" + dev.maxSge());
            out.println("\tmax_cq:\t\t\t\t" + dev.maxCq());
            out.println("\tmax_cqe:\t\t\t" + dev.maxCqe());
            out.println("\tmax_mr:\t\t\t\t" + dev.maxMr());
            out.println("\tmax_pd:\t\t\t\t" + dev.maxPd());
            out.println("\tmax_qp_rd_atom:\t\t\t" + dev.maxQpRdAtomic());
            out.println("\tmax_qp_init_rd_atom:\t\t" + dev.maxQpInitRdAtomic());
            out.println("\tmax_srq:\t\t\t" + dev.maxSrq());
            out.println("\tmax_ah:\t\t\t\t" + dev.maxAh());
            out.println("\tmax_mcast_grp:\t\t\t" + dev.maxMulticastGroups());
            out.println("\tnum_comp_vectors:\t\t" + ctx.completionVectorCount());
        }
        for (int p = 1; p <= dev.physicalPortCount(); p++) {
            if (port != 0 && p != port) {
                continue;
            }
            PortAttributes a = ctx.queryPort(p);
            out.println("\t\tport:\t" + p);
            out.printf("\t\t\tstate:\t\t\tPORT_%s (%d)%n", a.state().name(), a.state().value());
            out.printf("\t\t\tmax_mtu:\t\t%d (%d)%n", a.maxMtu().bytes(), a.maxMtu().value());
            out.printf("\t\t\tactive_mtu:\t\t%d (%d)%n", a.activeMtu().bytes(), a.activeMtu().value());
            out.println("\t\t\tsm_lid:\t\t\t" + a.smLid());
            out.println("\t\t\tport_lid:\t\t" + a.lid());
            out.println("\t\t\tlink_layer:\t\t" + linkLayer(a.linkLayer()));
            if (verbose) {
                out.printf("\t\t\tmax_msg_sz:\t\t0x%x%n", a.maxMessageSize());
                out.println("\t\t\tgid_tbl_len:\t\t" + a.gidTableLength());
                out.println("\t\t\tphys_state:\t\t" + physicalState(a.physicalState()));
            }
            for (RdmaContext.IndexedGid g : ctx.gidTable(p)) {
                boolean v2 = "RoCE v2".equals(gidType(ctx.deviceName(), p, g.index()));
                // Like ibv_devinfo: RoCE v2 GIDs are IP addresses and print as such; IB/RoCE v1 ones as raw hex.
                out.printf("\t\t\tGID[%3d]:\t\t%s%s%n", g.index(), v2 ? GidText.of(g.gid()) : g.gid(),
                        a.isEthernet() ? (v2 ? ", RoCE v2" : ", RoCE v1") : "");
            }
            out.println();
        }
    }

    /** @return e.g. {@code f086:ddff:fedb:e077}, as ibv_devinfo prints GUIDs */
    static String guid(long guid) {
        return String.format("%04x:%04x:%04x:%04x", (guid >>> 48) & 0xffff, (guid >>> 32) & 0xffff,
                (guid >>> 16) & 0xffff, guid & 0xffff);
    }

    private static String linkLayer(int value) {
        return switch (value) {
            case PortAttributes.LINK_LAYER_INFINIBAND, 0 -> "InfiniBand";
            case PortAttributes.LINK_LAYER_ETHERNET -> "Ethernet";
            default -> "Unknown (" + value + ")";
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

    /**
     * The GID type ({@code IB/RoCE v1} or {@code RoCE v2}) comes from sysfs, where libibverbs itself reads it: the verbs layer does
     * not wrap {@code ibv_query_gid_type}/{@code ibv_query_gid_ex} yet.
     */
    private static String gidType(String device, int port, int index) {
        Path f = SYSFS.resolve(device).resolve("ports").resolve(Integer.toString(port)).resolve("gid_attrs")
                .resolve("types").resolve(Integer.toString(index));
        try {
            String t = Files.readString(f).trim();
            return t.isEmpty() ? null : t;
        } catch (IOException | RuntimeException e) {
            return null; // InfiniBand ports and older kernels have no per-GID type
        }
    }
}
