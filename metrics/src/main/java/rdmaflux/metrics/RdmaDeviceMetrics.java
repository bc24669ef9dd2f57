package rdmaflux.metrics;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.RdmaException;

/**
 * Gauges and counters of the RDMA devices themselves: how many there are, each port's state and
 * active MTU, the kernel's per-port hardware counters (RNR NAKs, retries, packets, ...) and, where
 * the kernel answers, the resources (QPs, CQs, MRs, ...) allocated on each device.
 *
 * <p>{@link #bindTo} opens every device present at that moment and keeps the contexts open until
 * {@link #close()}: a port query on an open context is one ioctl, opening one per scrape is not.
 * Port attributes are cached for {@value #PORT_CACHE_MILLIS} ms so the state and MTU gauges of one
 * scrape share one query. Hardware counters are read from
 * {@code /sys/class/infiniband/<device>/ports/<port>/hw_counters/} on every read. Values of a closed
 * binder read as NaN.
 */
public final class RdmaDeviceMetrics implements MeterBinder, AutoCloseable {
    /** Gauge: RDMA devices libibverbs lists. */
    public static final String DEVICES = "rdmaflux.devices";
    /** Gauge: a port's logical state as {@code enum ibv_port_state} (1 down, 2 init, 3 armed, 4 active). */
    public static final String PORT_STATE = "rdmaflux.port.state";
    /** Gauge: a port's active MTU in bytes. */
    public static final String PORT_ACTIVE_MTU = "rdmaflux.port.active.mtu";
    /** Function counter: one kernel hardware counter of a port, tag {@code counter} (the sysfs file name). */
    public static final String PORT_HW_COUNTER = "rdmaflux.port.hw.counter";
    /** Gauge: resources allocated on a device, tag {@code type} (pd, cq, qp, cm_id, mr, ctx, srq). */
    public static final String DEVICE_RESOURCES = "rdmaflux.device.resources";

    static final long PORT_CACHE_MILLIS = 500;
    /** Files in hw_counters that are settings, not counts. */
    private static final List<String> NOT_COUNTERS = List.of("lifespan");

    private final Path sysfs;
    private final Tags tags;
    private final List<RdmaContext> contexts = new ArrayList<>();
    private final ResourceCounts resources;
    /**
     * The sysfs files behind the hardware counters. Micrometer holds a function counter's state object
     * weakly and its builder has no strongReference option; the counter's function ({@code this::readCounter})
     * keeps this binder reachable from the registry, and this list keeps the paths reachable from it. Without
     * it a GC froze every hardware counter at its last value.
     */
    private final List<Path> counterFiles = new ArrayList<>();
    private volatile boolean closed;

    /** Binds the devices of this machine, without extra tags. */
    public RdmaDeviceMetrics() {
        this(Tags.empty());
    }

    /**
     * Meters for every RDMA device in /sys/class/infiniband.
     *
     * @param tags tags every meter carries
     */
    public RdmaDeviceMetrics(Iterable<io.micrometer.core.instrument.Tag> tags) {
        this(Path.of("/sys/class/infiniband"), Tags.of(tags), true);
    }

    RdmaDeviceMetrics(Path sysfs, Tags tags, boolean resources) {
        this.sysfs = Objects.requireNonNull(sysfs);
        this.tags = tags;
        this.resources = resources ? new ResourceCounts() : null;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Gauge.builder(DEVICES, this, RdmaDeviceMetrics::deviceCount)
                .description("RDMA devices libibverbs lists")
                .tags(tags)
                .strongReference(true)
                .register(registry);
        List<RdmaDevice> devices;
        try {
            devices = Rdma.devices();
        } catch (RdmaException e) {
            return; // no rdma-core: nothing to bind but the device count, which reads 0
        }
        for (RdmaDevice d : devices) {
            RdmaContext ctx;
            int ports;
            try {
                ctx = d.open();
                ports = ctx.queryDevice().physicalPortCount();
            } catch (RdmaException e) {
                System.getLogger(RdmaDeviceMetrics.class.getName()).log(System.Logger.Level.WARNING,
                        "rdmaflux metrics: cannot open " + d.name() + ": " + e.getMessage());
                continue;
            }
            synchronized (contexts) {
                contexts.add(ctx);
            }
            for (int p = 1; p <= ports; p++) {
                bindPort(registry, d.name(), ctx, p);
            }
            if (resources != null) {
                for (String type : ResourceCounts.TYPES) {
                    Gauge.builder(DEVICE_RESOURCES, this, m -> m.resourceCount(d.name(), type))
                            .description("Resources allocated on the device by all processes, by type "
                                    + "(what `rdma resource show` prints)")
                            .tags(tags).tag("device", d.name()).tag("type", type)
                            .strongReference(true)
                            .register(registry);
                }
            }
        }
    }

    private void bindPort(MeterRegistry registry, String device, RdmaContext ctx, int port) {
        Tags t = tags.and("device", device, "port", Integer.toString(port));
        PortCache cache = new PortCache(ctx, port);
        Gauge.builder(PORT_STATE, cache, c -> c.read(a -> a.state().value()))
                .description("Logical port state (ibv_port_state: 1 down, 2 init, 3 armed, 4 active)")
                .tags(t).strongReference(true).register(registry);
        Gauge.builder(PORT_ACTIVE_MTU, cache, c -> c.read(a -> a.activeMtu().bytes()))
                .description("Active MTU of the port")
                .baseUnit("bytes").tags(t).strongReference(true).register(registry);
        bindHwCounters(registry, t, sysfs.resolve(device).resolve("ports").resolve(Integer.toString(port))
                .resolve("hw_counters"));
    }

    /** One function counter per file in a port's {@code hw_counters} directory; a missing directory binds none. */
    void bindHwCounters(MeterRegistry registry, Tags t, Path dir) {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.sorted().toList()) {
                String name = f.getFileName().toString();
                if (NOT_COUNTERS.contains(name) || !Files.isRegularFile(f)) {
                    continue;
                }
                synchronized (counterFiles) {
                    counterFiles.add(f);
                }
                FunctionCounter.builder(PORT_HW_COUNTER, f, this::readCounter)
                        .description("A port's kernel hardware counter (sysfs hw_counters), e.g. rcvd_rnr_err "
                                + "= RNR NAKs received")
                        .tags(t).tag("counter", name)
                        .register(registry);
            }
        } catch (IOException e) {
            System.getLogger(RdmaDeviceMetrics.class.getName()).log(System.Logger.Level.WARNING,
                    "rdmaflux metrics: cannot list " + dir + ": " + e);
        }
    }

    private double deviceCount() {
        if (closed) {
            return Double.NaN;
        }
        try {
            return Rdma.devices().size();
        } catch (RdmaException e) {
            return 0;
        }
    }

    private double readCounter(Path file) {
        if (closed) {
            return Double.NaN;
        }
        try {
            return Long.parseLong(Files.readString(file).strip());
        } catch (IOException | NumberFormatException e) {
            return Double.NaN; // the device went away, or the file is not a number
        }
    }

    private double resourceCount(String device, String type) {
        if (closed) {
            return Double.NaN;
        }
        return resources.count(device, type);
    }

    /** Closes the device contexts; meters stay registered and read NaN. */
    @Override
    public void close() {
        closed = true;
        synchronized (contexts) {
            for (RdmaContext c : contexts) {
                c.close();
            }
            contexts.clear();
        }
        if (resources != null) {
            resources.close();
        }
    }

    /** One port's attributes, queried at most once per {@link #PORT_CACHE_MILLIS}. */
    private final class PortCache {
        private final RdmaContext ctx;
        private final int port;
        private PortAttributes attributes;
        private long readAt;

        PortCache(RdmaContext ctx, int port) {
            this.ctx = ctx;
            this.port = port;
        }

        synchronized double read(java.util.function.ToIntFunction<PortAttributes> f) {
            if (closed) {
                return Double.NaN;
            }
            long now = System.currentTimeMillis();
            if (attributes == null || now - readAt > PORT_CACHE_MILLIS) {
                try {
                    attributes = ctx.queryPort(port);
                } catch (RuntimeException e) {
                    attributes = null;
                    return Double.NaN;
                }
                readAt = now;
            }
            return f.applyAsInt(attributes);
        }
    }
}
