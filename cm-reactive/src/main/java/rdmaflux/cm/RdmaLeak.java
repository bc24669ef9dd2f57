package rdmaflux.cm;

import java.util.List;

/**
 * A received message that became unreachable without {@link RdmaMessage#release()}, as
 * {@link RdmaLeakDetection} reports it. rdmaflux released it when it found it, so its connection got the
 * buffer (and the sender its credit) back; the report is there to fix the code that dropped it.
 *
 * @param connection the connection it came from (local and remote address)
 * @param length its length in bytes
 * @param received where it was delivered to the application: the thread (one of the loops' threads)
 * @param touches the application's accesses to the bytes (and {@code retain()}) as the thread and stack of
 *                each, oldest first: the first one
 *                (usually the {@code onNext} that got it) and the latest ones, at most
 *                {@link #MAX_TOUCHES} in all
 */
public record RdmaLeak(String connection, int length, String received, List<String> touches) {
    /** How many accesses a report keeps: the first, and the latest ones. */
    public static final int MAX_TOUCHES = 5;

    /**
     * Checks the parts and copies the touches.
     *
     * @throws NullPointerException when a part is null
     */
    public RdmaLeak {
        java.util.Objects.requireNonNull(connection, "connection");
        java.util.Objects.requireNonNull(received, "received");
        touches = List.copyOf(touches);
    }

    /** {@return the report: what leaked, what to do, where it was delivered and touched} */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("LEAK: an RdmaMessage of ").append(length)
                .append(" bytes from connection ").append(connection)
                .append(" became unreachable without release(); rdmaflux released it now. Release every message "
                        + "of receive() once done with it, or subscribe to receive().autoRelease() (or asByteArray(), "
                        + "asString(), aggregate()), which release after each onNext.\nReceived: ").append(received);
        if (touches.isEmpty()) {
            b.append("\nNever touched by the application after it was received.");
        }
        for (int i = 0; i < touches.size(); i++) {
            b.append(i == 0 ? "\nFirst touched: " : i == touches.size() - 1 ? "\nLast touched: " : "\nTouched: ")
                    .append(touches.get(i));
        }
        return b.toString();
    }
}
