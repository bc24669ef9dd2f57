package rdmaflux.verbs;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.Predicate;

import rdmaflux.verbs.RdmaUnavailableException.Reason;

/**
 * Diagnoses why RDMA cannot be used, checking causes from the most fundamental up so the message
 * names the first thing to fix. The file system roots are parameters so the tests can stage each case.
 */
final class Availability {
    /** Below this, registering even a modest buffer pool fails with ENOMEM; override with -Drdmaflux.memlock.min. */
    static final long DEFAULT_MIN_MEMLOCK = 16L << 20;

    private Availability() {
    }

    /** Facts about the machine; {@link #host()} reads the real ones. */
    record Probe(Predicate<String> libraryLoads, Path sys, Path dev, Path procSelf, IntSupplier verbsDeviceCount,
                 long minMemlock) {
    }

    /**
     * @param verbsDeviceCount how many devices libibverbs lists (called only once the libraries load)
     * @return the host's facts
     */
    static Probe host(IntSupplier verbsDeviceCount) {
        return new Probe(Availability::loads, Path.of("/sys"), Path.of("/dev"), Path.of("/proc/self"),
                verbsDeviceCount, Long.getLong("rdmaflux.memlock.min", DEFAULT_MIN_MEMLOCK));
    }

    /** {@return null when RDMA is usable, else the cause with a remedy in its message} */
    static RdmaUnavailableException diagnose(Probe p) {
        for (String lib : List.of("libibverbs.so.1", "librdmacm.so.1")) {
            if (!p.libraryLoads().test(lib)) {
                return new RdmaUnavailableException(Reason.LIBRARY_MISSING, lib + " cannot be loaded: install the "
                        + "rdma-core runtime (Debian/Ubuntu: apt-get install libibverbs1 librdmacm1 ibverbs-providers; "
                        + "Fedora/RHEL: dnf install libibverbs librdmacm)");
            }
        }
        Path ib = p.sys().resolve("class/infiniband");
        if (!Files.isDirectory(ib)) {
            return new RdmaUnavailableException(Reason.KERNEL_STACK_MISSING, "the kernel has no RDMA stack ("
                    + ib + " is missing): use a kernel with InfiniBand/RDMA support and load the driver, "
                    + "or Soft-RoCE (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0), "
                    + "or run inside the project's Soft-RoCE sandbox: see docs/softroce.md");
        }
        if (isEmpty(ib)) {
            return new RdmaUnavailableException(Reason.NO_DEVICE, "no RDMA device in " + ib + ": load the NIC's "
                    + "RDMA driver or add a Soft-RoCE device (rdma link add rxe0 type rxe netdev eth0); see docs/softroce.md");
        }
        Path cm = p.dev().resolve("infiniband/rdma_cm");
        if (!Files.exists(cm)) {
            return new RdmaUnavailableException(Reason.RDMA_CM_MISSING, cm + " is missing: load the RDMA "
                    + "connection manager's user-space interface (modprobe rdma_ucm)");
        }
        for (Path f : deviceFiles(p.dev().resolve("infiniband"))) {
            if (!Files.isReadable(f) || !Files.isWritable(f)) {
                return new RdmaUnavailableException(Reason.PERMISSION_DENIED, "no read/write access to " + f
                        + ": add the user to the group owning /dev/infiniband (often 'rdma') or install "
                        + "rdma-core's udev rules, then log in again");
            }
        }
        if (p.verbsDeviceCount().getAsInt() == 0) {
            return new RdmaUnavailableException(Reason.NO_DEVICE, "the kernel lists RDMA devices in " + ib
                    + " but libibverbs finds none: install the user-space providers (apt-get install ibverbs-providers)");
        }
        long memlock = memlockSoftLimit(p.procSelf());
        if (memlock >= 0 && memlock < p.minMemlock() && !Memlock.hasIpcLock(p.procSelf())) {
            return new RdmaUnavailableException(Reason.MEMLOCK_TOO_LOW, "the locked-memory limit is " + memlock
                    + " bytes, below " + p.minMemlock() + ": memory registration pins pages against it. Raise it "
                    + "(ulimit -l unlimited, or 'memlock' in /etc/security/limits.conf, or LimitMEMLOCK= for systemd "
                    + "services, or a container's --ulimit memlock=-1:-1 or --cap-add IPC_LOCK) or set "
                    + "-Drdmaflux.memlock.min to what your application needs");
        }
        return null;
    }

    private static boolean loads(String soname) {
        try {
            SymbolLookup.libraryLookup(soname, Arena.global());
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static boolean isEmpty(Path dir) {
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            return !s.iterator().hasNext();
        } catch (IOException e) {
            return true;
        }
    }

    private static List<Path> deviceFiles(Path dir) {
        try (var s = Files.list(dir)) {
            return s.filter(f -> {
                String n = f.getFileName().toString();
                return n.equals("rdma_cm") || n.startsWith("uverbs");
            }).sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    /** {@return the soft RLIMIT_MEMLOCK in bytes, or -1 for unlimited or unknown} */
    static long memlockSoftLimit(Path procSelf) {
        try {
            for (String line : Files.readAllLines(procSelf.resolve("limits"))) {
                if (line.startsWith("Max locked memory")) {
                    String soft = line.substring("Max locked memory".length()).trim().split("\\s+")[0];
                    return soft.equals("unlimited") ? -1 : Long.parseLong(soft);
                }
            }
        } catch (IOException | RuntimeException e) {
            // Unknown limits are not a reason to refuse; registration will report ENOMEM itself.
        }
        return -1;
    }
}
