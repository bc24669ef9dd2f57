package rdmaflux.samples.devicelist;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rdmaflux.samples.SampleRun;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;

/** device-list prints exactly what libibverbs' ibv_devices prints. */
class DeviceListIT {
    private static final Duration T = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    @Test
    void sameOutputAsIbvDevices() throws Exception {
        RdmaTestEnv.device();
        try (ChildProcess c = ChildProcess.start(tmp, "ibv_devices"); SampleRun ours = SampleRun.start(new DeviceList())) {
            assertEquals(0, c.awaitExit(T), c::describe);
            assertEquals(0, ours.awaitExit(T), ours::describe);
            assertEquals(c.stdout(), ours.stdout());
        }
    }
}
