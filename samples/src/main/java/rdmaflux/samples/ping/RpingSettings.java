package rdmaflux.samples.ping;

/**
 * The knobs rping has, with its limits.
 *
 * @param size ping buffer size in bytes ({@code -S}), {@link PingData#MIN_SIZE} to {@link PingData#MAX_SIZE}
 * @param count pings per connection ({@code -C}); 0 means until the client stops
 * @param verbose print each ping's text ({@code -v})
 * @param validate check each ping's bytes ({@code -V})
 */
public record RpingSettings(int size, int count, boolean verbose, boolean validate) {
    /** rping's default ping size. */
    public static final int DEFAULT_SIZE = 64;

    /** Validates the ranges rping itself enforces. */
    public RpingSettings {
        if (size < PingData.MIN_SIZE || size > PingData.MAX_SIZE) {
            throw new IllegalArgumentException("invalid size " + size + " (valid range is " + PingData.MIN_SIZE
                    + " to " + PingData.MAX_SIZE + ")");
        }
        if (count < 0) {
            throw new IllegalArgumentException("invalid count " + count);
        }
    }
}
