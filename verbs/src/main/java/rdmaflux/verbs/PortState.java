package rdmaflux.verbs;

/** Logical port state ({@code enum ibv_port_state}). */
public enum PortState implements NativeConstant {
    /** No state change. */
    NOP(0),
    /** Link down. */
    DOWN(1),
    /** Link up, not yet configured. */
    INIT(2),
    /** Configured, waiting to become active. */
    ARMED(3),
    /** Usable. */
    ACTIVE(4),
    /** Active, deferring. */
    ACTIVE_DEFER(5);

    private static final PortState[] BY_VALUE = NativeConstant.index(PortState.values(), 5);

    private final int value;

    PortState(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_PORT_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static PortState of(int value) {
        PortState c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown IBV_PORT_* value " + value);
        }
        return c;
    }
}
