package rdmaflux.verbs;

/** Asynchronous device event type ({@code enum ibv_event_type}). */
public enum AsyncEventType implements NativeConstant {
    /** {@code IBV_EVENT_CQ_ERR}. */
    CQ_ERR(0),
    /** {@code IBV_EVENT_QP_FATAL}. */
    QP_FATAL(1),
    /** {@code IBV_EVENT_QP_REQ_ERR}. */
    QP_REQ_ERR(2),
    /** {@code IBV_EVENT_QP_ACCESS_ERR}. */
    QP_ACCESS_ERR(3),
    /** {@code IBV_EVENT_COMM_EST}. */
    COMM_EST(4),
    /** {@code IBV_EVENT_SQ_DRAINED}. */
    SQ_DRAINED(5),
    /** {@code IBV_EVENT_PATH_MIG}. */
    PATH_MIG(6),
    /** {@code IBV_EVENT_PATH_MIG_ERR}. */
    PATH_MIG_ERR(7),
    /** {@code IBV_EVENT_DEVICE_FATAL}. */
    DEVICE_FATAL(8),
    /** {@code IBV_EVENT_PORT_ACTIVE}. */
    PORT_ACTIVE(9),
    /** {@code IBV_EVENT_PORT_ERR}. */
    PORT_ERR(10),
    /** {@code IBV_EVENT_LID_CHANGE}. */
    LID_CHANGE(11),
    /** {@code IBV_EVENT_PKEY_CHANGE}. */
    PKEY_CHANGE(12),
    /** {@code IBV_EVENT_SM_CHANGE}. */
    SM_CHANGE(13),
    /** {@code IBV_EVENT_SRQ_ERR}. */
    SRQ_ERR(14),
    /** {@code IBV_EVENT_SRQ_LIMIT_REACHED}. */
    SRQ_LIMIT_REACHED(15),
    /** {@code IBV_EVENT_QP_LAST_WQE_REACHED}. */
    QP_LAST_WQE_REACHED(16),
    /** {@code IBV_EVENT_CLIENT_REREGISTER}. */
    CLIENT_REREGISTER(17),
    /** {@code IBV_EVENT_GID_CHANGE}. */
    GID_CHANGE(18),
    /** {@code IBV_EVENT_WQ_FATAL}. */
    WQ_FATAL(19);

    private static final AsyncEventType[] BY_VALUE = NativeConstant.index(AsyncEventType.values(), 19);

    private final int value;

    AsyncEventType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_EVENT_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static AsyncEventType of(int value) {
        AsyncEventType c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_EVENT_* value " + value);
        }
        return c;
    }
}
