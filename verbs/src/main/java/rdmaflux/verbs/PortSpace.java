package rdmaflux.verbs;

/** Connection manager port space ({@code enum rdma_port_space}). */
public enum PortSpace implements NativeConstant {
    /** IP over InfiniBand. */
    IPOIB(2),
    /** Reliable connected, TCP-like port numbers (RC QPs). */
    TCP(262),
    /** Datagram, UDP-like port numbers (UD QPs, multicast). */
    UDP(273),
    /** Any InfiniBand QP type. */
    IB(319);

    private static final PortSpace[] BY_VALUE = NativeConstant.index(PortSpace.values(), 319);

    private final int value;

    PortSpace(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "RDMA_PS_" + name();
    }

    /**
     * The constant with a native value.
     *
     * @param value the C enum value
     * @return the constant
     * @throws IllegalArgumentException for a value this version does not know
     */
    public static PortSpace of(int value) {
        PortSpace c = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
        if (c == null) {
            throw new IllegalArgumentException("unknown RDMA_PS_* value " + value);
        }
        return c;
    }
}
