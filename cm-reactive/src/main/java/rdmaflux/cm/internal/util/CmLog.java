package rdmaflux.cm.internal.util;

/** The module's one logger, {@code rdmaflux.cm}: a leaf every package may use without depending on the loops. */
public final class CmLog {

    /** The logger; {@link System.Logger} so the module needs no logging library. */
    public static final System.Logger LOG = System.getLogger("rdmaflux.cm");

    private CmLog() {
    }
}
