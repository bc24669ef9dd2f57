package rdmaflux.verbs;

/** Connection manager event type ({@code enum rdma_cm_event_type}). */
public enum CmEventType implements NativeConstant {
    /** {@code RDMA_CM_EVENT_ADDR_RESOLVED}. */
    ADDR_RESOLVED(0),
    /** {@code RDMA_CM_EVENT_ADDR_ERROR}. */
    ADDR_ERROR(1),
    /** {@code RDMA_CM_EVENT_ROUTE_RESOLVED}. */
    ROUTE_RESOLVED(2),
    /** {@code RDMA_CM_EVENT_ROUTE_ERROR}. */
    ROUTE_ERROR(3),
    /** {@code RDMA_CM_EVENT_CONNECT_REQUEST}. */
    CONNECT_REQUEST(4),
    /** {@code RDMA_CM_EVENT_CONNECT_RESPONSE}. */
    CONNECT_RESPONSE(5),
    /** {@code RDMA_CM_EVENT_CONNECT_ERROR}. */
    CONNECT_ERROR(6),
    /** {@code RDMA_CM_EVENT_UNREACHABLE}. */
    UNREACHABLE(7),
    /** {@code RDMA_CM_EVENT_REJECTED}. */
    REJECTED(8),
    /** {@code RDMA_CM_EVENT_ESTABLISHED}. */
    ESTABLISHED(9),
    /** {@code RDMA_CM_EVENT_DISCONNECTED}. */
    DISCONNECTED(10),
    /** {@code RDMA_CM_EVENT_DEVICE_REMOVAL}. */
    DEVICE_REMOVAL(11),
    /** {@code RDMA_CM_EVENT_MULTICAST_JOIN}. */
    MULTICAST_JOIN(12),
    /** {@code RDMA_CM_EVENT_MULTICAST_ERROR}. */
    MULTICAST_ERROR(13),
    /** {@code RDMA_CM_EVENT_ADDR_CHANGE}. */
    ADDR_CHANGE(14),
    /** {@code RDMA_CM_EVENT_TIMEWAIT_EXIT}. */
    TIMEWAIT_EXIT(15);

    private static final CmEventType[] BY_VALUE = NativeConstant.index(CmEventType.values(), 15);

    private final int value;

    CmEventType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    /** {@return whether this event reports a failure of the step in progress} */
    public boolean isError() {
        return switch (this) {
            case ADDR_ERROR, ROUTE_ERROR, CONNECT_ERROR, UNREACHABLE, REJECTED, DEVICE_REMOVAL, MULTICAST_ERROR -> true;
            default -> false;
        };
    }

    @Override
    public String nativeName() {
        return "RDMA_CM_EVENT_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static CmEventType of(int value) {
        CmEventType c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown RDMA_CM_EVENT_* value " + value);
        }
        return c;
    }
}
