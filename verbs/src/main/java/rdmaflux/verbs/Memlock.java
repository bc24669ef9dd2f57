package rdmaflux.verbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Tells a registration refused by the locked-memory limit from other ENOMEMs, so that the caller gets
 * {@link RdmaMemlockException} with the limit and the fix instead of a bare errno.
 *
 * <p>The kernel ({@code ib_umem_get}) adds a registration's pages to the process's pinned count
 * ({@code VmPin} in {@code /proc/self/status}) and fails with ENOMEM when that passes the soft
 * {@code RLIMIT_MEMLOCK} and the process lacks {@code CAP_IPC_LOCK}. Some providers pin through other paths
 * that report EAGAIN for the same reason. Other ENOMEMs (the kernel out of memory, a device table full)
 * stay as they were: the limit is blamed only when it is finite, not lifted by the capability, and too low
 * for what was pinned plus what the registration needed (or the pinned count is unknown).
 */
final class Memlock {
    /** The capability that lifts the limit for pinned memory. */
    private static final int CAP_IPC_LOCK = 14;
    /** Pages are counted whole; 4 KiB is the smallest page of the architectures rdmaflux runs on. */
    private static final long PAGE = 4096;
    private static final Path PROC_SELF = Path.of("/proc/self");

    private Memlock() {
    }

    /**
     * A failed registration of {@code length} bytes at {@code address}, explained by the limit when it is the cause.
     *
     * @param failure what the registration threw
     * @param address the registered memory's address
     * @param length its length in bytes
     * @return {@link RdmaMemlockException} (with {@code failure} as its cause) when the limit refused it, else {@code failure}
     */
    static RdmaException explain(RdmaException failure, long address, long length) {
        if (failure.errno() != Errno.ENOMEM && failure.errno() != Errno.EAGAIN) {
            return failure;
        }
        long[] limit;
        try {
            limit = Posix.memlockLimit();
        } catch (RdmaException e) {
            failure.addSuppressed(e);
            return failure;
        }
        long pinned = pinnedBytes(PROC_SELF);
        long pages = pinBytes(address, length);
        if (!isLimit(limit[0], hasIpcLock(PROC_SELF), pinned, pages)) {
            return failure;
        }
        RdmaMemlockException e = new RdmaMemlockException(failure.operation(), failure.errno(), pages, limit[0],
                limit[1], pinned);
        e.initCause(failure);
        return e;
    }

    /**
     * Whether the limit explains a refused registration.
     *
     * @param soft the soft limit in bytes, -1 for unlimited
     * @param ipcLock whether the process has CAP_IPC_LOCK
     * @param pinned bytes pinned before, -1 when unknown
     * @param needed bytes the registration pins
     * @return true when the limit is finite, not lifted, and (as far as known) too low
     */
    static boolean isLimit(long soft, boolean ipcLock, long pinned, long needed) {
        if (soft < 0 || ipcLock) {
            return false;
        }
        return pinned < 0 || pinned + needed > soft;
    }

    /** {@return the bytes of the whole pages {@code [address, address + length)} touches: what the kernel pins} */
    static long pinBytes(long address, long length) {
        long first = Math.floorDiv(address, PAGE);
        long last = Math.floorDiv(address + Math.max(length, 1) - 1, PAGE);
        return (last - first + 1) * PAGE;
    }

    /** {@return this process's pinned memory ({@code VmPin}) in bytes, or -1 when the kernel does not say} */
    static long pinnedBytes(Path procSelf) {
        try {
            for (String line : Files.readAllLines(procSelf.resolve("status"))) {
                if (line.startsWith("VmPin:")) {
                    String[] f = line.substring(6).trim().split("\\s+");
                    return Long.parseLong(f[0]) * 1024; // always in kB
                }
            }
        } catch (IOException | RuntimeException e) {
            // Unknown: the caller then blames the limit on its other evidence.
        }
        return -1;
    }

    /** CAP_IPC_LOCK lifts the memlock limit for pinned memory (root has it). */
    static boolean hasIpcLock(Path procSelf) {
        try {
            for (String line : Files.readAllLines(procSelf.resolve("status"))) {
                if (line.startsWith("CapEff:")) {
                    long caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
                    return (caps & (1L << CAP_IPC_LOCK)) != 0;
                }
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
        return false;
    }
}
