package rdmaflux.verbs;

/**
 * A Java constant that mirrors a C enum value of rdma-core.
 *
 * <p>The tests compare every implementation against the installed headers, so a changed header value
 * cannot silently miscode a work request.
 */
public interface NativeConstant {
    /** @return the C value */
    int value();

    /** @return the C identifier, e.g. {@code IBV_WR_SEND} */
    String nativeName();

    /** Builds a value-indexed lookup table, so decoding a completion allocates nothing. */
    static <E extends NativeConstant> E[] index(E[] constants, int maxValue) {
        E[] table = java.util.Arrays.copyOf(constants, maxValue + 1);
        java.util.Arrays.fill(table, null);
        for (E c : constants) {
            table[c.value()] = c;
        }
        return table;
    }
}
