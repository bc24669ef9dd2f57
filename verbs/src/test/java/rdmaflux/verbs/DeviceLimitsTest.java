package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DeviceLimits}: which limit its messages name, from the rdma cgroup files and the device's maximums
 * (the sandbox's {@code DeviceLimitsIT} hits the limits themselves).
 */
class DeviceLimitsTest {
    /** rxe's maximums where they matter here (kernel 6.1). */
    private static final DeviceAttributes RXE = new DeviceAttributes("", 0, 0, 0, 0, 0, -1, 4096, 1048560, 1048576, 0,
            32, 32, 1048576, 32767, 524287, 1048576, 128, 0, 128, 1, 524287, 917503, 1048576, 27, 65536, 0, 0, 0, 1, 15, 1);

    @Test
    void theInnermostCgroupWithALimitIsNamedWithItsCount(@TempDir Path dir) throws IOException {
        Path root = dir.resolve("cgroup");
        Path inner = Files.createDirectories(root.resolve("a/b"));
        Files.writeString(root.resolve("a/rdma.max"), "rxe0 hca_handle=max hca_object=40\n");
        Files.writeString(root.resolve("a/rdma.current"), "rxe0 hca_handle=1 hca_object=40\n");
        Files.writeString(inner.resolve("rdma.max"), "mlx5_0 hca_handle=2 hca_object=5\nrxe0 hca_handle=max hca_object=max\n");
        Path self = Files.writeString(dir.resolve("self"), "0::/a/b\n");
        String m = DeviceLimits.cgroup("rxe0", DeviceLimits.Kind.QUEUE_PAIR, root, self);
        assertTrue(m.startsWith("the rdma cgroup of this process refused another queue pair on rxe0 ("
                + root.resolve("a") + "/rdma.max: rxe0 hca_object=40; rdma.current: 40)"), m);
        assertTrue(m.contains("raise hca_object in the cgroup's rdma.max"), m);
        assertTrue(m.contains("close the connections"), m);
    }

    @Test
    void withoutTheHierarchyTheErrnoAloneNamesTheLimit(@TempDir Path dir) {
        String m = DeviceLimits.cgroup("rxe0", DeviceLimits.Kind.MEMORY_REGION, dir.resolve("none"), dir.resolve("none"));
        assertTrue(m.startsWith("the rdma cgroup of this process refused another memory region on rxe0: "), m);
        assertTrue(m.contains("hca_object"), m);
    }

    @Test
    void sizesBeyondTheDevicesMaximumsAreNamed() {
        assertEquals("asked for 40000 entries, more than max_cqe 32767", DeviceLimits.cq(40000).beyond(RXE));
        assertNull(DeviceLimits.cq(32767).beyond(RXE));
        assertNull(DeviceLimits.qp(64, 64, 1, 1).beyond(RXE));
        assertNull(DeviceLimits.qp(64, 0, 1, 0).beyond(RXE));
        assertEquals("asked for 2000000 send and 64 receive work requests, more than max_qp_wr 1048576",
                DeviceLimits.qp(2_000_000, 64, 1, 1).beyond(RXE));
        assertEquals("asked for 33 send and 1 receive scatter/gather entries, more than max_sge 32",
                DeviceLimits.qp(64, 64, 33, 1).beyond(RXE));
    }

    @Test
    void theDeviceMaximumOfEachKindIsItsOwn() {
        assertEquals(1048560, DeviceLimits.Kind.QUEUE_PAIR.of(RXE));
        assertEquals(1048576, DeviceLimits.Kind.COMPLETION_QUEUE.of(RXE));
        assertEquals(524287, DeviceLimits.Kind.MEMORY_REGION.of(RXE));
        assertEquals(917503, DeviceLimits.Kind.SHARED_RECEIVE_QUEUE.of(RXE));
    }
}
