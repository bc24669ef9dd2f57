package rdmaflux.samples.ping;

/**
 * What one rping connection achieved.
 *
 * @param pings complete iterations (source read by the server, echoed into the sink, both "go"s seen)
 * @param verified iterations whose data this side checked byte for byte (0 without {@code -V})
 */
public record RpingResult(int pings, int verified) {
}
