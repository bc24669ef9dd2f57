package rdmaflux.cm;

import java.time.Duration;
import java.util.Objects;

/**
 * The checks every options builder runs when a setter is called, so that a wrong value fails where it is
 * set, with one wording for all options: the option's name, what it allows, and the value given.
 *
 * <p>Threads: any; stateless.
 */
final class OptionChecks {
    private OptionChecks() {
    }

    /** {@return {@code v}, when {@code min <= v <= max}; else throws {@link IllegalArgumentException}} */
    static int range(String option, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(option + " must be " + min + ".." + max + ", got " + v);
        }
        return v;
    }

    /**
     * {@return {@code v}, when {@code min <= v <= max} or {@code v} is the constant {@code special} named
     * {@code specialName}; else throws {@link IllegalArgumentException}}
     */
    static int rangeOr(String option, int v, int min, int max, int special, String specialName) {
        if (v != special && (v < min || v > max)) {
            throw new IllegalArgumentException(option + " must be " + min + ".." + max + " or " + specialName + " ("
                    + special + "), got " + v);
        }
        return v;
    }

    /** {@return {@code v}, when {@code v >= min}; else throws {@link IllegalArgumentException}} */
    static long atLeast(String option, long v, long min) {
        if (v < min) {
            throw new IllegalArgumentException(option + " must be at least " + min + ", got " + v);
        }
        return v;
    }

    /** {@return {@code v}, when {@code v >= min}; else throws {@link IllegalArgumentException}} */
    static int atLeast(String option, int v, int min) {
        return (int) atLeast(option, (long) v, min);
    }

    /** {@return {@code d}, when it is longer than zero; else throws {@link IllegalArgumentException}} */
    static Duration positive(String option, Duration d) {
        if (notNull(option, d).isNegative() || d.isZero()) {
            throw new IllegalArgumentException(option + " must be positive, got " + d);
        }
        return d;
    }

    /**
     * {@return {@code d}, unless it is negative: then throws {@link IllegalArgumentException}, whose message says
     * that zero means {@code zero}}
     */
    static Duration notNegative(String option, Duration d, String zero) {
        if (notNull(option, d).isNegative()) {
            throw new IllegalArgumentException(option + " must be zero (" + zero + ") or positive, got " + d);
        }
        return d;
    }

    /** {@return {@code v}, unless it is null: then throws {@link NullPointerException}} */
    static <T> T notNull(String option, T v) {
        return Objects.requireNonNull(v, () -> option + " must not be null");
    }
}
