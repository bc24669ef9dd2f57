package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The locked-memory diagnosis of a refused registration: the limit read through getrlimit, the decision
 * whether the limit is to blame, and the message. The registration refused by a real limit is
 * rdmaflux.cm.MemlockIT's (it needs a device and a process without CAP_IPC_LOCK).
 */
class MemlockTest {
    @TempDir
    Path root;

    @Test
    void getrlimitReadsWhatProcSelfLimitsSays() throws IOException {
        long[] limit = Posix.memlockLimit();
        String line = Files.readAllLines(Path.of("/proc/self/limits")).stream()
                .filter(l -> l.startsWith("Max locked memory")).findFirst().orElseThrow();
        String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
        assertEquals(f[0].equals("unlimited") ? -1 : Long.parseLong(f[0]), limit[0], line);
        assertEquals(f[1].equals("unlimited") ? -1 : Long.parseLong(f[1]), limit[1], line);
    }

    @Test
    void theLimitIsBlamedOnlyWhenFiniteNotLiftedAndTooLow() {
        long mib = 1 << 20;
        assertTrue(Memlock.isLimit(32 * mib, false, 30 * mib, 4 * mib));
        assertTrue(Memlock.isLimit(32 * mib, false, -1, 4 * mib), "pinned count unknown: the limit is the likely cause");
        assertFalse(Memlock.isLimit(32 * mib, false, 1 * mib, 4 * mib), "it fits: some other ENOMEM");
        assertFalse(Memlock.isLimit(-1, false, 30 * mib, 4 * mib), "unlimited");
        assertFalse(Memlock.isLimit(32 * mib, true, 30 * mib, 4 * mib), "CAP_IPC_LOCK lifts the limit");
    }

    @Test
    void pinnedPagesAreCountedWhole() {
        assertEquals(4096, Memlock.pinBytes(8192, 1));
        assertEquals(8192, Memlock.pinBytes(8192 + 4000, 200), "crosses a page boundary");
        assertEquals(3 * 4096, Memlock.pinBytes(4096 + 64, 2 * 4096));
    }

    @Test
    void vmPinIsReadInBytes() throws IOException {
        Files.writeString(root.resolve("status"), "Name:\tjava\nVmLck:\t       0 kB\nVmPin:\t    1536 kB\n");
        assertEquals(1536 * 1024, Memlock.pinnedBytes(root));
        Files.writeString(root.resolve("status"), "Name:\tjava\n");
        assertEquals(-1, Memlock.pinnedBytes(root));
    }

    @Test
    void theMessageNamesTheLimitsAndEveryFix() {
        RdmaMemlockException e = new RdmaMemlockException("ibv_reg_mr", Errno.ENOMEM, 64L << 20, 32L << 20,
                64L << 20, 1536 * 1024);
        String m = e.getMessage();
        for (String part : new String[] {"ibv_reg_mr failed: ENOMEM", "RLIMIT_MEMLOCK", "soft 32 MiB (33554432 bytes)",
                "hard 64 MiB (67108864 bytes)", "1.5 MiB (1572864 bytes) pinned already", "registering 64 MiB",
                "CAP_IPC_LOCK", "ulimit -l", "LimitMEMLOCK=", "/etc/security/limits.conf", "--ulimit memlock",
                "--cap-add IPC_LOCK"}) {
            assertTrue(m.contains(part), "missing '" + part + "' in: " + m);
        }
        assertInstanceOf(RdmaResourceException.class, e, "callers catching the resource type still catch it");
        assertEquals(Errno.ENOMEM, e.errno());
        assertEquals(32L << 20, e.softLimit());
        assertEquals(64L << 20, e.hardLimit());
        assertTrue(new RdmaMemlockException("ibv_reg_mr", Errno.ENOMEM, 4096, 65536, -1, -1).getMessage()
                .contains("hard unlimited"));
    }

    @Test
    void otherErrorsAreLeftAsTheyWere() {
        RdmaException einval = RdmaException.of("ibv_reg_mr", Errno.EINVAL, null);
        assertSame(einval, Memlock.explain(einval, 4096, 4096));
        // This host's own limit decides for ENOMEM: with CAP_IPC_LOCK or no limit it is not blamed.
        RdmaException enomem = RdmaException.of("ibv_reg_mr", Errno.ENOMEM, null);
        long[] limit = Posix.memlockLimit();
        RdmaException explained = Memlock.explain(enomem, 4096, 1L << 40);
        boolean blamed = limit[0] >= 0 && !Memlock.hasIpcLock(Path.of("/proc/self"));
        assertEquals(blamed, explained instanceof RdmaMemlockException, explained.getMessage());
        if (blamed) {
            assertSame(enomem, explained.getCause());
        }
    }
}
