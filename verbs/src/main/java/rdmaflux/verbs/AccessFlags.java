package rdmaflux.verbs;

import java.util.EnumSet;
import java.util.Set;

/**
 * An immutable set of {@link AccessFlag}s as registered with a memory region or granted by a QP.
 *
 * <p>The default for memory registration is {@link #LOCAL_WRITE}: remote peers get no access unless the
 * caller asks for it, because a leaked rkey on a remote-writable region lets any peer scribble on it.
 */
public final class AccessFlags {
    /** Local write only: enough for sends, receives and as the target of RDMA reads and atomics. */
    public static final AccessFlags LOCAL_WRITE = of(AccessFlag.LOCAL_WRITE);
    /** Local write plus remote read, write and atomics: for regions peers operate on. */
    public static final AccessFlags REMOTE_ALL =
            of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_ATOMIC);

    private final int mask;

    private AccessFlags(int mask) {
        this.mask = mask;
    }

    /**
     * A set of flags.
     *
     * @param flags the flags; remote write and remote atomic require local write (the verbs rule), so it
     *              is added for them
     * @return the set
     */
    public static AccessFlags of(AccessFlag... flags) {
        int m = 0;
        for (AccessFlag f : flags) {
            m |= f.value();
        }
        if ((m & (AccessFlag.REMOTE_WRITE.value() | AccessFlag.REMOTE_ATOMIC.value())) != 0) {
            m |= AccessFlag.LOCAL_WRITE.value();
        }
        return new AccessFlags(m);
    }

    /**
     * Decodes a native mask.
     *
     * @param mask bits of {@code enum ibv_access_flags}
     * @return the set
     */
    public static AccessFlags fromMask(int mask) {
        return new AccessFlags(mask);
    }

    /** {@return the native bit mask} */
    public int mask() {
        return mask;
    }

    /**
     * Tells whether the set holds a flag.
     *
     * @param flag a flag
     * @return whether it is in the set
     */
    public boolean contains(AccessFlag flag) {
        return (mask & flag.value()) != 0;
    }

    /** {@return the flags as an enum set (a copy)} */
    public Set<AccessFlag> toSet() {
        EnumSet<AccessFlag> s = EnumSet.noneOf(AccessFlag.class);
        for (AccessFlag f : AccessFlag.values()) {
            if (contains(f)) {
                s.add(f);
            }
        }
        return s;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof AccessFlags a && a.mask == mask;
    }

    @Override
    public int hashCode() {
        return mask;
    }

    @Override
    public String toString() {
        return toSet().toString();
    }
}
