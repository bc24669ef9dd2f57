package rdmaflux.cm.internal.lifecycle;

import rdmaflux.cm.ConnectionOptions;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.DeviceAttributes;
import rdmaflux.verbs.RdmaContext;

/**
 * Turns {@link ConnectionOptions}' transport settings into the {@code rdma_conn_param} of a connect or
 * an accept, checked against the device's limits.
 *
 * <p>Stateless apart from a cache of each device's limits (immutable, so any thread may use it).
 */
public final class TransportParameters {
    /** rdma_cma.h's RDMA_MAX_INIT_DEPTH / RDMA_MAX_RESP_RES: librdmacm substitutes the device maximum. */
    static final int RDMA_MAXIMUM = 0xFF;

    private static final Map<String, Limits> LIMITS = new ConcurrentHashMap<>();

    private TransportParameters() {
    }

    /**
     * A device's limits on RDMA reads and atomics in flight per QP.
     *
     * @param device the device's name
     * @param maxInitiatorDepth {@code max_qp_init_rd_atom}
     * @param maxResponderResources {@code max_qp_rd_atom}
     */
    record Limits(String device, int maxInitiatorDepth, int maxResponderResources) {
    }

    /**
     * The device's limits on reads and atomics in flight.
     *
     * @param ctx a device context
     * @return its limits, queried once per device
     */
    static Limits limits(RdmaContext ctx) {
        return LIMITS.computeIfAbsent(ctx.deviceName(), name -> {
            DeviceAttributes a = ctx.queryDevice();
            return new Limits(name, a.maxQpInitRdAtomic(), a.maxQpRdAtomic());
        });
    }

    /**
     * The parameters of {@code rdma_connect}.
     *
     * @param options the connection's options
     * @param limits the device's limits
     * @param privateData the handshake data
     * @return the parameters
     * @throws IllegalArgumentException when an option exceeds the device's limit
     */
    static ConnectionParameters forConnect(ConnectionOptions options, Limits limits, byte[] privateData) {
        return new ConnectionParameters(privateData, responder(options, limits), initiator(options, limits), false,
                options.retryCount(), options.rnrRetryCount(), false, 0);
    }

    /**
     * The parameters of {@code rdma_accept}: never more reads in flight either way than the connect request
     * offered, since the peer's QP is set up with its own values.
     *
     * @param options the server's options
     * @param limits the device's limits
     * @param request the connect request's parameters, from this side's point of view (librdmacm swaps
     *                the peer's initiator depth and responder resources), or {@code null}
     * @param privateData the handshake data
     * @return the parameters
     * @throws IllegalArgumentException when an option exceeds the device's limit
     */
    static ConnectionParameters forAccept(ConnectionOptions options, Limits limits, ConnectionParameters request,
                                          byte[] privateData) {
        int responder = responder(options, limits);
        int initiator = initiator(options, limits);
        if (request != null) {
            // RDMA_MAXIMUM already means "at most what was asked" to librdmacm; explicit values are clamped here.
            if (responder != RDMA_MAXIMUM) {
                responder = Math.min(responder, request.responderResources());
            }
            if (initiator != RDMA_MAXIMUM) {
                initiator = Math.min(initiator, request.initiatorDepth());
            }
        }
        return new ConnectionParameters(privateData, responder, initiator, false, options.retryCount(),
                options.rnrRetryCount(), false, 0);
    }

    private static int initiator(ConnectionOptions options, Limits limits) {
        return checked("initiatorDepth", options.initiatorDepth(), limits.maxInitiatorDepth(),
                "max_qp_init_rd_atom", limits);
    }

    private static int responder(ConnectionOptions options, Limits limits) {
        return checked("responderResources", options.responderResources(), limits.maxResponderResources(),
                "max_qp_rd_atom", limits);
    }

    private static int checked(String option, int value, int max, String attribute, Limits limits) {
        if (value == ConnectionOptions.DEVICE_MAXIMUM) {
            return RDMA_MAXIMUM;
        }
        if (value > max) {
            throw new IllegalArgumentException("ConnectionOptions." + option + " is " + value + " but device "
                    + limits.device() + " allows at most " + max + " (" + attribute + "); use a value up to "
                    + max + " or ConnectionOptions.DEVICE_MAXIMUM");
        }
        return value;
    }
}
