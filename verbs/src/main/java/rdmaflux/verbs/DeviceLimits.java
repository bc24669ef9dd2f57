package rdmaflux.verbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

/**
 * Tells which limit refused a verbs object (a queue pair, CQ, memory region, protection domain, SRQ), so that the
 * caller gets an {@link RdmaResourceException} that names the limit and what to do instead of a bare errno:
 * <ul>
 *   <li>EAGAIN: the kernel's rdma cgroup controller. Every object a process makes through a device is charged to
 *   its cgroup as one {@code hca_object}, and {@code rdmacg_try_charge} refuses the next one with EAGAIN once a
 *   cgroup on the way to the root has as many as its {@code rdma.max} allows. No device returns EAGAIN for its own
 *   tables, so the errno alone names the limit; the message adds the cgroup and its numbers when
 *   {@code /sys/fs/cgroup} is the cgroup v2 hierarchy.</li>
 *   <li>EINVAL with a size the device cannot make: a CQ of more than {@code max_cqe} entries, a queue pair with
 *   more work requests than {@code max_qp_wr} or more scatter/gather entries than {@code max_sge}.</li>
 *   <li>ENOMEM or ENOSPC: the device's table of that object ({@code max_qp}, {@code max_cq}, {@code max_mr},
 *   {@code max_pd}, {@code max_srq}) is full, or the kernel is out of memory; the message gives the maximum.</li>
 * </ul>
 * Other failures stay as they were. Runs only after a call failed, so the happy path pays nothing.
 */
final class DeviceLimits {
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");
    private static final Path PROC_SELF_CGROUP = Path.of("/proc/self/cgroup");

    /** What was being made, and the device's maximum of it. */
    enum Kind {
        QUEUE_PAIR("queue pair", "max_qp"),
        COMPLETION_QUEUE("completion queue", "max_cq"),
        MEMORY_REGION("memory region", "max_mr"),
        PROTECTION_DOMAIN("protection domain", "max_pd"),
        SHARED_RECEIVE_QUEUE("shared receive queue", "max_srq");

        final String noun;
        final String maximum;

        Kind(String noun, String maximum) {
            this.noun = noun;
            this.maximum = maximum;
        }

        int of(DeviceAttributes a) {
            return switch (this) {
                case QUEUE_PAIR -> a.maxQp();
                case COMPLETION_QUEUE -> a.maxCq();
                case MEMORY_REGION -> a.maxMr();
                case PROTECTION_DOMAIN -> a.maxPd();
                case SHARED_RECEIVE_QUEUE -> a.maxSrq();
            };
        }
    }

    private DeviceLimits() {
    }

    /**
     * A failed creation, explained by the limit that refused it when one did.
     *
     * @param failure what the call threw
     * @param device the name of the device it was made on
     * @param attributes the device's attributes, queried only when the errno may mean one of its maximums
     * @param kind what was being made
     * @param size what was asked of the device for it ({@link #cq}, {@link #qp}), or {@code null}
     * @return an {@link RdmaResourceException} naming the limit (with {@code failure} as its cause), else {@code failure}
     */
    static RdmaException explain(RdmaException failure, String device, Supplier<DeviceAttributes> attributes, Kind kind,
            Size size) {
        int errno = failure.errno();
        String detail;
        if (errno == Errno.EAGAIN) {
            detail = cgroup(device, kind, CGROUP_ROOT, PROC_SELF_CGROUP);
        } else if (errno == Errno.EINVAL || errno == Errno.ENOMEM || errno == Errno.ENOSPC) {
            DeviceAttributes a;
            try {
                a = attributes.get();
            } catch (RdmaException e) {
                failure.addSuppressed(e);
                return failure;
            }
            String tooLarge = size == null ? null : size.beyond(a);
            if (tooLarge != null) {
                detail = device + " cannot make this " + kind.noun + ": " + tooLarge
                        + "; ask for less (for a connection: lower its queue depths or receive buffers)";
            } else if (errno == Errno.EINVAL) {
                return failure;
            } else {
                detail = device + " holds at most " + kind.of(a) + " " + kind.noun + "s (" + kind.maximum
                        + "), or the kernel is out of memory: close the connections, registrations and endpoints "
                        + "this process no longer needs, or spread them over more devices";
            }
        } else {
            return failure;
        }
        RdmaResourceException e = new RdmaResourceException(failure.operation(), errno, detail);
        e.initCause(failure);
        return e;
    }

    /** What a CQ or queue pair asked of the device, to compare with its maximums. */
    @FunctionalInterface
    interface Size {
        /** {@return what exceeds the device's maximum, in words, or {@code null} when nothing does} */
        String beyond(DeviceAttributes a);
    }

    /** {@return a CQ of {@code entries} entries} */
    static Size cq(int entries) {
        return a -> entries > a.maxCqe()
                ? "asked for " + entries + " entries, more than max_cqe " + a.maxCqe() : null;
    }

    /** {@return a queue pair of these depths and scatter/gather entries; 0 receives on a shared receive queue} */
    static Size qp(int sendWr, int receiveWr, int sendSge, int receiveSge) {
        return a -> {
            if (sendWr > a.maxQpWr() || receiveWr > a.maxQpWr()) {
                return "asked for " + sendWr + " send and " + receiveWr + " receive work requests, more than max_qp_wr "
                        + a.maxQpWr();
            }
            if (sendSge > a.maxSge() || receiveSge > a.maxSge()) {
                return "asked for " + sendSge + " send and " + receiveSge
                        + " receive scatter/gather entries, more than max_sge " + a.maxSge();
            }
            return null;
        };
    }

    /**
     * The rdma cgroup limit, with the innermost cgroup of this process that limits objects on {@code device}
     * and its count, when the hierarchy says.
     */
    static String cgroup(String device, Kind kind, Path root, Path procSelfCgroup) {
        String where = "";
        try {
            String path = null;
            for (String line : Files.readAllLines(procSelfCgroup)) {
                if (line.startsWith("0::")) {
                    path = line.substring(3);
                }
            }
            if (path != null) {
                for (Path dir = root.resolve(path.replaceFirst("^/+", "")).normalize(); dir.startsWith(root);
                        dir = dir.getParent()) {
                    String max = field(dir.resolve("rdma.max"), device, "hca_object");
                    if (max != null && !max.equals("max")) {
                        String current = field(dir.resolve("rdma.current"), device, "hca_object");
                        where = " (" + dir + "/rdma.max: " + device + " hca_object=" + max + "; rdma.current: "
                                + (current == null ? "?" : current) + ")";
                        break;
                    }
                    if (dir.equals(root)) {
                        break;
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // The hierarchy is elsewhere or unreadable: the errno alone still names the limit.
        }
        return "the rdma cgroup of this process refused another " + kind.noun + " on " + device + where
                + ": every queue pair, CQ, "
                + "memory region and protection domain counts as one hca_object; close the connections, "
                + "registrations and endpoints this process no longer needs, or raise hca_object in the cgroup's "
                + "rdma.max (a container's runtime or device plugin sets it)";
    }

    /** {@return {@code name}'s value in {@code file}'s line for {@code device}, or {@code null}} */
    static String field(Path file, String device, String name) throws IOException {
        if (!Files.isReadable(file)) {
            return null;
        }
        List<String> lines = Files.readAllLines(file);
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 0 && f[0].equals(device)) {
                for (int i = 1; i < f.length; i++) {
                    if (f[i].startsWith(name + "=")) {
                        return f[i].substring(name.length() + 1);
                    }
                }
            }
        }
        return null;
    }
}
