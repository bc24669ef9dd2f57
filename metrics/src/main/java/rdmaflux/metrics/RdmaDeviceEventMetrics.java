package rdmaflux.metrics;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import reactor.core.Disposable;
import reactor.core.Disposables;
import rdmaflux.cm.RdmaDeviceEvents;
import rdmaflux.verbs.AsyncEvent;
import rdmaflux.verbs.AsyncEventType;

/**
 * Counts a device's asynchronous events ({@link RdmaDeviceEvents}) by type: counter
 * {@value #DEVICE_EVENTS}, tags {@code device} and {@code type} (the lower-case {@link AsyncEventType}
 * name, e.g. {@code port_active}, {@code port_err}: at most twenty values). A counter appears with the
 * first event of its type. Counting runs on the event stream's thread; {@link #close()} stops it.
 */
public final class RdmaDeviceEventMetrics implements MeterBinder, AutoCloseable {
    /** Counter: asynchronous events of an RDMA device, tags {@code device} and {@code type}. */
    public static final String DEVICE_EVENTS = "rdmaflux.device.events";

    private final String device;
    private final Tags tags;
    private final Disposable.Composite subscriptions = Disposables.composite();
    private final ConcurrentMap<AsyncEventType, Counter> counters = new ConcurrentHashMap<>();

    /**
     * Counts the events of one device once bound.
     *
     * @param device the device whose events to count, e.g. {@code rxe0}
     * @param tags tags every meter carries
     */
    public RdmaDeviceEventMetrics(String device, Iterable<io.micrometer.core.instrument.Tag> tags) {
        this.device = Objects.requireNonNull(device, "device");
        this.tags = Tags.of(tags).and("device", device);
    }

    /**
     * Subscribes to the device's events and counts them into {@code registry}. A failing event stream
     * (the device went away) stops counting; the counters keep their values.
     *
     * @param registry where the counters go
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        subscriptions.add(RdmaDeviceEvents.events(device).subscribe(e -> count(registry, e), e -> { }));
    }

    private void count(MeterRegistry registry, AsyncEvent e) {
        counters.computeIfAbsent(e.type(), t -> Counter.builder(DEVICE_EVENTS)
                .description("Asynchronous events of an RDMA device (ibv_get_async_event) by type")
                .tags(tags).tag("type", t.name().toLowerCase(java.util.Locale.ROOT)).register(registry))
                .increment();
    }

    /** Stops counting. */
    @Override
    public void close() {
        subscriptions.dispose();
    }
}
