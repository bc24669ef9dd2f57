package rdmaflux.verbs;

/**
 * A Java constant that mirrors a C enum value of rdma-core.
 *
 * <p>The tests compare every implementation against the installed headers, so a changed header value
 * cannot silently miscode a work request.
 */
public interface NativeConstant {
    /** {@return the C value} */
    int value();

    /** {@return the C identifier, e.g. {@code IBV_WR_SEND}} */
    String nativeName();

    /**
     * Builds a value-indexed lookup table, so decoding a completion allocates nothing.
     *
     * @param <E>       the constant type
     * @param constants every constant of the type
     * @param maxValue  the largest C value among them
     * @return a table whose element {@code v} is the constant of value {@code v}, or null
     */
    static <E extends NativeConstant> E[] index(E[] constants, int maxValue) {
        E[] table = java.util.Arrays.copyOf(constants, maxValue + 1);
        java.util.Arrays.fill(table, null);
        for (E c : constants) {
            table[c.value()] = c;
        }
        return table;
    }

    /**
     * Linear lookup for small enums decoded off the hot path.
     *
     * @param <E> the constant type
     * @param constants the enum's values
     * @param value the C value
     * @return the constant with that value, or {@code null} when this version knows none
     */
    static <E extends NativeConstant> E find(E[] constants, int value) {
        for (E c : constants) {
            if (c.value() == value) {
                return c;
            }
        }
        return null;
    }

    /**
     * Decodes a C bit mask into the flag constants it contains.
     *
     * @param <E> the flag type
     * @param type the flag enum
     * @param flags the native mask
     * @return the known flags set in {@code flags}, in declaration order (a new modifiable set)
     */
    static <E extends Enum<E> & NativeConstant> java.util.EnumSet<E> decode(Class<E> type, int flags) {
        java.util.EnumSet<E> out = java.util.EnumSet.noneOf(type);
        for (E c : type.getEnumConstants()) {
            if ((flags & c.value()) != 0) {
                out.add(c);
            }
        }
        return out;
    }

    /**
     * Combines flag constants into the C bit mask.
     *
     * @param flags flag constants
     * @return their C values or-ed together
     */
    static int mask(Iterable<? extends NativeConstant> flags) {
        int m = 0;
        for (NativeConstant c : flags) {
            m |= c.value();
        }
        return m;
    }
}
