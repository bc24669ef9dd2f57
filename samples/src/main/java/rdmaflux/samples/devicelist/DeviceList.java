package rdmaflux.samples.devicelist;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaDevice;

/** libibverbs' {@code ibv_devices} ({@code device_list.c}): each device's name and node GUID, in its format. */
@Command(name = "device-list", mixinStandardHelpOptions = true,
        description = "Lists the RDMA devices and their node GUIDs, like ibv_devices.")
public final class DeviceList implements Callable<Integer> {
    /** Creates the command. */
    public DeviceList() {
    }

    @Spec
    CommandSpec spec;

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new DeviceList()).execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        if (!Rdma.isAvailable()) {
            spec.commandLine().getErr().println("Failed to get IB devices list: "
                    + Rdma.unavailabilityCause().getMessage());
            spec.commandLine().getErr().flush();
            return 1;
        }
        out.println(String.format("    %-16s\t   node GUID", "device"));
        out.println(String.format("    %-16s\t----------------", "------"));
        for (RdmaDevice d : Rdma.devices()) {
            out.println(String.format("    %-16s\t%016x", d.name(), d.nodeGuid()));
        }
        out.flush();
        return 0;
    }
}
