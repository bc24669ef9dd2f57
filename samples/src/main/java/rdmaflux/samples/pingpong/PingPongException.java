package rdmaflux.samples.pingpong;

/** A pingpong that cannot go on; its message is what the C program would print on stderr. */
final class PingPongException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PingPongException(String message) {
        super(message);
    }
}
