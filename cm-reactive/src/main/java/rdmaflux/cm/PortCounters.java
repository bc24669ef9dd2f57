package rdmaflux.cm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A snapshot of an RDMA port's hardware counters, as the kernel exports them under
 * {@code /sys/class/infiniband/<device>/ports/<port>/hw_counters/} (the same numbers as
 * {@code rdma statistic show}). Names and meanings depend on the driver.
 *
 * <p>UD has no flow control, and a datagram that finds no posted receive is dropped by the device
 * without any completion, so the application cannot count it. The device sometimes can: on Soft-RoCE
 * (rxe) {@value #RECEIVED_PACKETS} counts every packet the port accepted for a QP or multicast group
 * (once per packet, however many QPs are attached) and {@value #DELIVERED} counts the receives it
 * completed. While exactly one QP on the port is attached to the groups in use and no other traffic
 * runs, the difference over an interval is the number of datagrams dropped for want of a receive:
 * {@link #undelivered()}. See docs/multicast.md.
 */
public final class PortCounters {
    /** rxe: packets accepted by the port (after address and QP checks). */
    public static final String RECEIVED_PACKETS = "rcvd_pkts";
    /** rxe: receive work requests completed (SENDs delivered). */
    public static final String DELIVERED = "rdma_recvs";

    private final String device;
    private final int port;
    private final Map<String, Long> values;

    private PortCounters(String device, int port, Map<String, Long> values) {
        this.device = device;
        this.port = port;
        this.values = Collections.unmodifiableMap(values);
    }

    /**
     * Reads the counters now.
     *
     * @param device e.g. {@code rxe0} ({@link MulticastMembership#deviceName()})
     * @param port the port number ({@link MulticastMembership#portNumber()})
     * @return the snapshot; empty when the driver exports no hardware counters
     */
    public static PortCounters read(String device, int port) {
        return read(Path.of("/sys/class/infiniband"), device, port);
    }

    static PortCounters read(Path sysfs, String device, int port) {
        Path dir = sysfs.resolve(device).resolve("ports").resolve(Integer.toString(port)).resolve("hw_counters");
        Map<String, Long> values = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                try {
                    values.put(f.getFileName().toString(), Long.parseLong(Files.readString(f).trim()));
                } catch (NumberFormatException | IOException e) {
                    // Not a plain counter (or unreadable): not one of ours.
                }
            }
        } catch (NoSuchFileException e) {
            // No hardware counters for this driver: an empty snapshot.
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + dir, e);
        }
        return new PortCounters(device, port, values);
    }

    /** {@return the device} */
    public String device() {
        return device;
    }

    /** {@return the port} */
    public int port() {
        return port;
    }

    /** {@return every counter by name} */
    public Map<String, Long> asMap() {
        return values;
    }

    /**
     * One counter.
     *
     * @param name a counter name
     * @return its value, or -1 when the device does not export it
     */
    public long get(String name) {
        return values.getOrDefault(name, -1L);
    }

    /**
     * The change since an earlier snapshot.
     *
     * @param earlier a snapshot of the same port taken before this one
     * @return the change of every counter both snapshots have
     */
    public PortCounters minus(PortCounters earlier) {
        if (!device.equals(earlier.device) || port != earlier.port) {
            throw new IllegalArgumentException("snapshots of different ports: " + earlier.device + "/" + earlier.port
                    + " and " + device + "/" + port);
        }
        Map<String, Long> d = new TreeMap<>();
        values.forEach((k, v) -> {
            Long before = earlier.values.get(k);
            if (before != null) {
                d.put(k, v - before);
            }
        });
        return new PortCounters(device, port, d);
    }

    /**
     * On rxe, {@value #RECEIVED_PACKETS} minus {@value #DELIVERED}: on a delta ({@link #minus}) taken
     * while one attached QP receives and nothing else runs, the datagrams dropped for want of a posted
     * receive.
     *
     * @return the difference, or -1 when the device lacks either counter
     */
    public long undelivered() {
        long received = get(RECEIVED_PACKETS);
        long delivered = get(DELIVERED);
        return received < 0 || delivered < 0 ? -1 : received - delivered;
    }

    @Override
    public String toString() {
        return "PortCounters[" + device + "/" + port + " " + values + "]";
    }
}
