package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import rdmaflux.verbs.ffi.ibv_context;

/**
 * Letting go of librdmacm's context of a removed device ({@link RdmaContext#releaseRemoved()}).
 *
 * <p>Why it is needed: a device that cannot disassociate a user context (Soft-RoCE) is only removed once every
 * descriptor of every context on it is closed ({@code ib_uverbs_remove_one} waits for them). librdmacm keeps
 * its context of a device open until it marks the device dead, which it does only when it reads the device
 * list again ({@code sync_devices_list}, on {@code rdma_get_devices} or an id on a device it does not know);
 * and that read fails with ENODEV when the list is empty, as it is when the removed device was the only one.
 * So it never closes the context, and the removal waits until the process exits.
 *
 * <p>What it does, once its caller saw to it that nothing made through the context is open: asks librdmacm to
 * read its list ({@code rdma_get_devices}); if that leaves the context out, librdmacm knows the device is gone
 * and closes the context with its last id (at once if none is left). Otherwise, once libibverbs no longer
 * lists the device (the kernel is removing it), the context's two descriptors, its commands and its
 * asynchronous events, are retired ({@link Posix#retire}): an eventfd takes each one's place in one
 * {@code dup2}, so the kernel's file is let go of, the numbers stay taken, and librdmacm's own close of the
 * context later (when a device appears and it reads its list) closes the eventfds. A late call through the
 * context reaches an eventfd and fails (ENOTTY, EINVAL) rather than another file.
 *
 * <p>Threads: any; the caller makes it once per context.
 */
final class RemovedDevice {
    private RemovedDevice() {
    }

    /**
     * @param context librdmacm's {@code struct ibv_context *} of the removed device
     * @return whether the device is let go of; {@code false} while libibverbs still lists it
     */
    static boolean release(MemorySegment context) {
        if (librdmacmDropped(context.address())) {
            return true;
        }
        if (listed(ibv_context.device(context).address())) {
            return false;
        }
        Posix.retire(ibv_context.cmd_fd(context));
        Posix.retire(ibv_context.async_fd(context));
        return true;
    }

    /** {@return whether {@code rdma_get_devices} leaves the context out: librdmacm marked its device dead} */
    private static boolean librdmacmDropped(long context) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = Calls.Plain.rdmaGetDevices(count);
            if (list.equals(MemorySegment.NULL)) {
                return false; // it could not read the list (no device left): it knows nothing
            }
            try {
                int n = count.get(ValueLayout.JAVA_INT, 0);
                MemorySegment array = list.reinterpret(ValueLayout.ADDRESS.byteSize() * n);
                for (int i = 0; i < n; i++) {
                    if (array.getAtIndex(ValueLayout.ADDRESS, i).address() == context) {
                        return false;
                    }
                }
                return true;
            } finally {
                Calls.Plain.rdmaFreeDevices(list);
            }
        }
    }

    /** {@return whether libibverbs' device list, read again now, holds {@code device} ({@code struct ibv_device *})} */
    private static boolean listed(long device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = (MemorySegment) Calls.IBV_GET_DEVICE_LIST.invoke(count);
            if (list.equals(MemorySegment.NULL)) {
                return false; // no device at all (or no RDMA): not this one either
            }
            try {
                int n = count.get(ValueLayout.JAVA_INT, 0);
                MemorySegment array = list.reinterpret(ValueLayout.ADDRESS.byteSize() * n);
                for (int i = 0; i < n; i++) {
                    if (array.getAtIndex(ValueLayout.ADDRESS, i).address() == device) {
                        return true;
                    }
                }
                return false;
            } finally {
                Calls.Plain.freeDeviceList(list);
            }
        }
    }
}
