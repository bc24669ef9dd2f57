package rdmaflux.metrics;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.LongAdder;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;

/**
 * The state objects behind gauges, one per registry, name and tags. Micrometer keeps the first gauge
 * registered under an id and ignores the state object of later registrations; a second recorder on
 * the same registry must therefore add to the same counter as the first, or its changes would be lost.
 */
final class GaugeState {
    private static final Map<MeterRegistry, Map<List<Object>, LongAdder>> STATE = new WeakHashMap<>();

    private GaugeState() {
    }

    /** {@return the adder behind the gauge {@code name}/{@code tags} in {@code registry}, registering it once} */
    static LongAdder adder(MeterRegistry registry, String name, Tags tags, String description, String unit) {
        synchronized (STATE) {
            Map<List<Object>, LongAdder> perRegistry = STATE.computeIfAbsent(registry, r -> new HashMap<>());
            List<Object> key = List.of(name, tags);
            LongAdder adder = perRegistry.get(key);
            if (adder == null) {
                adder = new LongAdder();
                perRegistry.put(key, adder);
                Gauge.builder(name, adder, LongAdder::doubleValue)
                        .description(description)
                        .baseUnit(unit)
                        .tags(tags)
                        .strongReference(true)
                        .register(registry);
            }
            return adder;
        }
    }
}
