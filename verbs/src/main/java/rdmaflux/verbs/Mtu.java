package rdmaflux.verbs;

/** Path MTU of a port or connection ({@code enum ibv_mtu}). */
public enum Mtu implements NativeConstant {
    /** 256 bytes. */
    MTU_256(1, 256),
    /** 512 bytes. */
    MTU_512(2, 512),
    /** 1024 bytes: what Soft-RoCE on a 1500-byte Ethernet link reports. */
    MTU_1024(3, 1024),
    /** 2048 bytes. */
    MTU_2048(4, 2048),
    /** 4096 bytes. */
    MTU_4096(5, 4096);

    private final int value;
    private final int bytes;

    Mtu(int value, int bytes) {
        this.value = value;
        this.bytes = bytes;
    }

    @Override
    public int value() {
        return value;
    }

    @Override
    public String nativeName() {
        return "IBV_" + name();
    }

    /** {@return the MTU in bytes} */
    public int bytes() {
        return bytes;
    }

    /**
     * Decodes a C {@code enum ibv_mtu} value.
     *
     * @param value the C value
     * @return the constant
     * @throws IllegalArgumentException for an unknown value
     */
    public static Mtu of(int value) {
        for (Mtu m : values()) {
            if (m.value == value) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown IBV_MTU_* value " + value);
    }
}
