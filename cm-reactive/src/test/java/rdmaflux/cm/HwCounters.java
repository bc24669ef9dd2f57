package rdmaflux.cm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import rdmaflux.testing.RdmaTestEnv;

/**
 * Test fixture: the RDMA device's port counters ({@code /sys/class/infiniband/DEV/ports/1/hw_counters},
 * what {@code rdma statistic show} prints), e.g. rxe's {@code rcvd_rnr_err}, {@code send_rnr_err} and
 * {@code retry_rnr_exceeded_err}. They count device-wide, which is exact while one test runs at a time.
 */
final class HwCounters {
    private HwCounters() {
    }

    /** @return counter name → value; fails if the device exposes none */
    static Map<String, Long> read() {
        Path dir = Path.of("/sys/class/infiniband", RdmaTestEnv.device(), "ports", "1", "hw_counters");
        Map<String, Long> values = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                String v = Files.readString(f).trim();
                if (v.matches("\\d+")) {
                    values.put(f.getFileName().toString(), Long.parseLong(v));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the device's counters in " + dir, e);
        }
        if (values.isEmpty()) {
            throw new AssertionError("no hardware counters in " + dir);
        }
        return values;
    }

    /** @return {@code after - before} per counter */
    static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> d = new TreeMap<>();
        after.forEach((k, v) -> d.put(k, v - before.getOrDefault(k, 0L)));
        return d;
    }
}
