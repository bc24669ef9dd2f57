package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rdmaflux.verbs.RdmaUnavailableException.Reason;

/** The availability diagnosis, each cause staged in a fake /sys, /dev and /proc/self, and on this host. */
class AvailabilityTest {
    @TempDir
    Path root;

    private Availability.Probe probe(boolean libs, int verbsDevices) {
        return new Availability.Probe(lib -> libs, root.resolve("sys"), root.resolve("dev"), root.resolve("proc"),
                () -> verbsDevices, 16L << 20);
    }

    private void stage(String limitsSoft, String capEff) throws IOException {
        Files.createDirectories(root.resolve("sys/class/infiniband/rxe0"));
        Files.createDirectories(root.resolve("dev/infiniband"));
        Files.writeString(root.resolve("dev/infiniband/rdma_cm"), "");
        Files.writeString(root.resolve("dev/infiniband/uverbs0"), "");
        Files.createDirectories(root.resolve("proc"));
        Files.writeString(root.resolve("proc/limits"),
                "Limit                     Soft Limit           Hard Limit           Units\n"
                        + "Max locked memory         " + limitsSoft + "              unlimited            bytes\n");
        Files.writeString(root.resolve("proc/status"), "Name:\tjava\nCapEff:\t" + capEff + "\n");
    }

    private Reason reason(Availability.Probe p) {
        RdmaUnavailableException e = Availability.diagnose(p);
        return e == null ? null : e.reason();
    }

    @Test
    void eachCauseIsNamedInOrder() throws IOException {
        assertEquals(Reason.LIBRARY_MISSING, reason(probe(false, 1)));
        assertTrue(Availability.diagnose(probe(false, 1)).getMessage().contains("ibverbs-providers"));
        assertEquals(Reason.KERNEL_STACK_MISSING, reason(probe(true, 1)));

        Files.createDirectories(root.resolve("sys/class/infiniband"));
        assertEquals(Reason.NO_DEVICE, reason(probe(true, 1)));

        stage("unlimited", "0000000000000000");
        assertNull(Availability.diagnose(probe(true, 1)));
        assertEquals(Reason.NO_DEVICE, reason(probe(true, 0)), "kernel devices without a user-space provider");

        Files.delete(root.resolve("dev/infiniband/rdma_cm"));
        assertEquals(Reason.RDMA_CM_MISSING, reason(probe(true, 1)));
        assertTrue(Availability.diagnose(probe(true, 1)).getMessage().contains("modprobe rdma_ucm"));
    }

    @Test
    void permissionAndMemlock() throws IOException {
        stage("65536", "0000000000000000");
        RdmaUnavailableException low = Availability.diagnose(probe(true, 1));
        assertEquals(Reason.MEMLOCK_TOO_LOW, low.reason());
        assertTrue(low.getMessage().contains("ulimit -l"), low.getMessage());
        assertTrue(low.getMessage().contains("--cap-add IPC_LOCK"), low.getMessage());

        // CAP_IPC_LOCK (bit 14) lifts the limit, as for root.
        stage("65536", "0000000000004000");
        assertNull(Availability.diagnose(probe(true, 1)));

        if (!"root".equals(System.getProperty("user.name"))) {
            Files.setPosixFilePermissions(root.resolve("dev/infiniband/uverbs0"), PosixFilePermissions.fromString("---------"));
            assertEquals(Reason.PERMISSION_DENIED, reason(probe(true, 1)));
        }
    }

    @Test
    void thisHostIsDiagnosedConsistently() {
        RdmaUnavailableException cause = Rdma.unavailabilityCause();
        if (!Files.isDirectory(Path.of("/sys/class/infiniband"))) {
            // The build machines: no RDMA in the kernel at all.
            assertNotNull(cause);
            assertEquals(Reason.KERNEL_STACK_MISSING, cause.reason());
            assertTrue(cause.getMessage().contains("docs/softroce.md"), cause.getMessage());
            assertEquals(false, Rdma.isAvailable());
            assertThrows(RdmaUnavailableException.class, Rdma::ensureAvailable);
            assertThrows(RdmaUnavailableException.class, EventChannel::create);
            assertTrue(Rdma.devices().isEmpty());
        } else {
            assertEquals(cause == null, Rdma.isAvailable());
        }
    }
}
