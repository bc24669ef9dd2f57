package rdmaflux.verbs;

/** Queue pair state ({@code enum ibv_qp_state}). */
public enum QpState implements NativeConstant {
    /** Just created or reset. */
    RESET(0),
    /** Initialised: receives may be posted. */
    INIT(1),
    /** Ready to receive. */
    RTR(2),
    /** Ready to send. */
    RTS(3),
    /** Send queue drained. */
    SQD(4),
    /** Send queue error. */
    SQE(5),
    /** Error: all outstanding work requests flush. */
    ERR(6),
    /** Unknown state. */
    UNKNOWN(7);

    private static final QpState[] BY_VALUE = NativeConstant.index(QpState.values(), 7);

    private final int value;

    QpState(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_QPS_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static QpState of(int value) {
        QpState c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_QPS_* value " + value);
        }
        return c;
    }
}
