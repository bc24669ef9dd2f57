package rdmaflux.samples.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a port's hardware counters from sysfs (rxe and most RDMA drivers publish them there). */
final class PortCounters {
    /** RNR NAKs this port's responders sent: receives were not posted in time. */
    static final String RNR_NAKS_SENT = "send_rnr_err";
    /** Packets the port transmitted (rxe: once per UD datagram). */
    static final String SENT_PKTS = "sent_pkts";
    /** Packets the port accepted for a QP or multicast group, once per packet, posted receive or not. */
    static final String RCVD_PKTS = "rcvd_pkts";
    /** Receives completed: datagrams delivered to a QP. */
    static final String RDMA_RECVS = "rdma_recvs";

    private PortCounters() {
    }

    /**
     * @param device e.g. {@code rxe0}
     * @param counter a file name under {@code ports/1/hw_counters}
     * @return the value, or -1 when the device publishes no such counter
     */
    static long read(String device, String counter) {
        Path f = Path.of("/sys/class/infiniband", device, "ports", "1", "hw_counters", counter);
        try {
            return Long.parseLong(Files.readString(f).trim());
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }
}
