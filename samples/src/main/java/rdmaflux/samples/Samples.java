package rdmaflux.samples;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.Optional;

import rdmaflux.verbs.GidEntry;
import rdmaflux.verbs.PortState;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;

/** What every sample checks before it starts. */
public final class Samples {
    /** The exit code of a sample that cannot run here. */
    public static final int CANNOT_RUN = 2;

    private Samples() {
    }

    /**
     * Finds the address a sample binds or connects to: the one the user gave, else
     * $RDMAFLUX_SANDBOX_ADDR, else the first IP address of the network interface behind the first
     * active RDMA port (printed on stderr, so the user sees which one was taken). Explains on stderr
     * why the sample cannot run when RDMA is unavailable or no address can be found.
     *
     * @param name    the sample's name, for the messages
     * @param address the address the user gave, or null/empty
     * @return the address to use, or null when the sample cannot run
     */
    public static String address(String name, String address) {
        if (!Rdma.isAvailable()) {
            System.err.println("RDMA is not available: " + Rdma.unavailabilityCause().getMessage());
            return null;
        }
        if (address != null && !address.isEmpty()) {
            return address;
        }
        String sandbox = System.getenv("RDMAFLUX_SANDBOX_ADDR");
        if (sandbox != null && !sandbox.isEmpty()) {
            return sandbox;
        }
        for (RdmaDevice device : Rdma.devices()) {
            Optional<String> found = firstActiveAddress(device);
            if (found.isPresent()) {
                return found.get();
            }
        }
        System.err.println(name + ": no active RDMA port has an IP address here: give one with -a/--address");
        return null;
    }

    private static Optional<String> firstActiveAddress(RdmaDevice device) {
        try (RdmaContext ctx = device.open()) {
            for (GidEntry entry : ctx.queryGidTable()) {
                if (ctx.queryPort(entry.port()).state() != PortState.ACTIVE) {
                    continue;
                }
                Optional<NetworkInterface> netdev = entry.networkInterface();
                if (netdev.isEmpty()) {
                    continue;
                }
                // IPv4 first: the samples' peers (rping, mckey) are most often given IPv4 addresses.
                Optional<InetAddress> ip = netdev.get().inetAddresses()
                        .sorted((a, b) -> Boolean.compare(b instanceof Inet4Address, a instanceof Inet4Address))
                        .filter(a -> !a.isLinkLocalAddress())
                        .findFirst();
                if (ip.isPresent()) {
                    String a = ip.get().getHostAddress();
                    System.err.printf("no -a/--address given: using %s (%s, RDMA device %s port %d)%n",
                            a, netdev.get().getName(), device.name(), entry.port());
                    return Optional.of(a);
                }
            }
        }
        return Optional.empty();
    }
}
