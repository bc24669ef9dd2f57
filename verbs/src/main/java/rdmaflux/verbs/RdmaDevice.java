package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import rdmaflux.verbs.ffi.ibv_device;

/**
 * An RDMA device as libibverbs lists it. A plain value: it holds no native memory, and
 * {@link #open()} looks the device up again by name.
 *
 * @param name the kernel name, e.g. {@code rxe0}
 * @param nodeGuid the node GUID in host order (0 for Soft-RoCE devices that have none)
 * @param nodeType what kind of node the device is ({@code ibv_device.node_type})
 * @param transport the transport it speaks ({@code ibv_device.transport_type}; {@link Transport#IB} for
 *                  RoCE too)
 */
public record RdmaDevice(String name, long nodeGuid, NodeType nodeType, Transport transport) {

    /**
     * Opens the device.
     *
     * @return an open context owned by the caller
     * @throws RdmaNoDeviceException when the device has gone away
     */
    public RdmaContext open() {
        return openByName(name);
    }

    static List<RdmaDevice> list() {
        return withDeviceList(devices -> {
            List<RdmaDevice> out = new ArrayList<>(devices.size());
            for (MemorySegment d : devices) {
                MemorySegment dev = d.reinterpret(ibv_device.sizeof());
                out.add(new RdmaDevice(Calls.Plain.deviceName(d),
                        Long.reverseBytes(Calls.Plain.deviceGuid(d)), NodeType.of(ibv_device.node_type(dev)),
                        Transport.of(ibv_device.transport_type(dev))));
            }
            return List.copyOf(out);
        });
    }

    static RdmaContext openByName(String name) {
        return withDeviceList(devices -> {
            for (MemorySegment d : devices) {
                if (name.equals(Calls.Plain.deviceName(d))) {
                    return new RdmaContext(Calls.IBV_OPEN_DEVICE.callPointer(d), true);
                }
            }
            throw new RdmaNoDeviceException("ibv_open_device", Errno.ENODEV, "no RDMA device named '" + name
                    + "' (devices: " + list().stream().map(RdmaDevice::name).toList() + ")");
        });
    }

    /** Runs {@code f} over the device pointers and frees the list, which only opened contexts outlive. */
    private static <T> T withDeviceList(Function<List<MemorySegment>, T> f) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = (MemorySegment) Calls.IBV_GET_DEVICE_LIST.invoke(count);
            if (list.equals(MemorySegment.NULL)) {
                int errno = Native.lastErrno();
                // ENOSYS: the kernel has no RDMA at all; that is an empty list, not an error.
                if (errno == 0 || errno == Errno.ENOSYS || errno == Errno.ENOENT) {
                    return f.apply(List.of());
                }
                throw RdmaException.of("ibv_get_device_list", errno, null);
            }
            try {
                int n = count.get(ValueLayout.JAVA_INT, 0);
                MemorySegment array = list.reinterpret(ValueLayout.ADDRESS.byteSize() * n);
                List<MemorySegment> devices = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    devices.add(array.getAtIndex(ValueLayout.ADDRESS, i));
                }
                return f.apply(devices);
            } finally {
                Calls.Plain.freeDeviceList(list);
            }
        }
    }
}
