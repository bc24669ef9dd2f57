package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reading and subtracting hw_counters snapshots from a sysfs-shaped directory. */
class PortCountersTest {

    private static void write(Path sysfs, String name, long value) throws IOException {
        Path dir = sysfs.resolve("rxe0/ports/1/hw_counters");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(name), value + "\n");
    }

    @Test
    void deltaAndUndelivered(@TempDir Path sysfs) throws IOException {
        write(sysfs, PortCounters.RECEIVED_PACKETS, 100);
        write(sysfs, PortCounters.DELIVERED, 90);
        write(sysfs, "sent_pkts", 7);
        PortCounters before = PortCounters.read(sysfs, "rxe0", 1);
        write(sysfs, PortCounters.RECEIVED_PACKETS, 130);
        write(sysfs, PortCounters.DELIVERED, 98);
        PortCounters after = PortCounters.read(sysfs, "rxe0", 1);
        PortCounters delta = after.minus(before);
        assertEquals(30, delta.get(PortCounters.RECEIVED_PACKETS));
        assertEquals(8, delta.get(PortCounters.DELIVERED));
        assertEquals(22, delta.undelivered());
        assertEquals(0, delta.get("sent_pkts"));
        assertEquals(-1, delta.get("no_such_counter"));
    }

    @Test
    void missingCountersAreEmpty(@TempDir Path sysfs) {
        PortCounters c = PortCounters.read(sysfs, "mlx5_0", 1);
        assertTrue(c.asMap().isEmpty());
        assertEquals(-1, c.undelivered());
    }

    @Test
    void unreadableEntriesAreSkipped(@TempDir Path sysfs) throws IOException {
        write(sysfs, PortCounters.DELIVERED, 3);
        Files.writeString(sysfs.resolve("rxe0/ports/1/hw_counters/lifespan_note"), "not a number");
        assertEquals(1, PortCounters.read(sysfs, "rxe0", 1).asMap().size());
    }

    @Test
    void snapshotsOfDifferentPortsDoNotSubtract(@TempDir Path sysfs) throws IOException {
        write(sysfs, PortCounters.DELIVERED, 3);
        PortCounters a = PortCounters.read(sysfs, "rxe0", 1);
        PortCounters b = PortCounters.read(sysfs, "rxe0", 2);
        assertThrows(IllegalArgumentException.class, () -> a.minus(b));
    }
}
