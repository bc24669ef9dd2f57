package rdmaflux.metrics.autoconfigure;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import rdmaflux.verbs.PortAttributes;
import rdmaflux.verbs.PortState;
import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaContext;
import rdmaflux.verbs.RdmaDevice;
import rdmaflux.verbs.RdmaException;

/**
 * Actuator health of the RDMA devices: UP when at least one port of one device is {@link PortState#ACTIVE},
 * DOWN otherwise (no rdma-core, no device, every port down). The details list every device's ports with
 * their state, active MTU and link layer.
 *
 * <p>Each check opens every device, queries its ports and closes it: a few ioctls per device. Actuator runs
 * it off the request threads; it never runs on an rdmaflux loop.
 */
public final class RdmaHealthIndicator extends AbstractHealthIndicator {

    /** Creates the indicator. */
    public RdmaHealthIndicator() {
        super("RDMA health check failed");
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        List<RdmaDevice> devices = Rdma.devices();
        Map<String, Object> details = new LinkedHashMap<>();
        boolean active = false;
        for (RdmaDevice d : devices) {
            Map<String, Object> ports = new LinkedHashMap<>();
            try (RdmaContext ctx = d.open()) {
                int n = ctx.queryDevice().physicalPortCount();
                for (int p = 1; p <= n; p++) {
                    PortAttributes a = ctx.queryPort(p);
                    active |= a.state() == PortState.ACTIVE;
                    ports.put(Integer.toString(p), Map.of(
                            "state", a.state().name(),
                            "activeMtu", a.activeMtu().bytes(),
                            "linkLayer", a.isEthernet() ? "Ethernet" : "InfiniBand"));
                }
                details.put(d.name(), Map.of("ports", ports));
            } catch (RdmaException e) {
                details.put(d.name(), Map.of("error", e.getMessage()));
            }
        }
        builder.withDetail("devices", details);
        if (active) {
            builder.up();
        } else {
            builder.down().withDetail("reason", devices.isEmpty()
                    ? "no RDMA device: load a driver, or add a Soft-RoCE link (rdma link add rxe0 type rxe netdev eth0)"
                    : "no port is ACTIVE: check the links (rdma link show, ibv_devinfo)");
        }
    }
}
