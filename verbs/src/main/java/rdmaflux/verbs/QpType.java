package rdmaflux.verbs;

/** Queue pair transport type ({@code enum ibv_qp_type}). */
public enum QpType implements NativeConstant {
    /** Reliable connected. */
    RC(2),
    /** Unreliable connected. */
    UC(3),
    /** Unreliable datagram. */
    UD(4);

    private static final QpType[] BY_VALUE = NativeConstant.index(QpType.values(), 4);

    private final int value;

    QpType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_QPT_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static QpType of(int value) {
        QpType c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_QPT_* value " + value);
        }
        return c;
    }
}
